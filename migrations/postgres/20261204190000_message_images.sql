-- The images of a user message (docs/api.md "Images"), as a JSON array of
-- {"artifact_id": …} (a data: URL stored as an artifact of the run) or {"url": …} (an http(s)
-- URL kept as it came); NULL when it has none. The bytes live in artifacts, never here.
ALTER TABLE messages ADD COLUMN images TEXT;
