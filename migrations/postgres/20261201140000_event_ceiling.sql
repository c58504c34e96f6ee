-- The highest event id a run may have shown to clients: see the SQLite migration of the same
-- name. 0 for older runs.
ALTER TABLE runs ADD COLUMN event_ceiling BIGINT NOT NULL DEFAULT 0;
