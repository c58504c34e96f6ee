-- Search over message text (`GET /api/conversations?q=`, docs/api.md): an FTS5 index of every
-- message's content with the trigram tokenizer, so a word matches anywhere inside a message
-- (as a substring, case-insensitively) the way the PostgreSQL side's ILIKE does, and a word of
-- three characters or more is found through the index instead of a scan. External content: the
-- text stays only in `messages`; the triggers keep the index in step with every writer.
CREATE VIRTUAL TABLE messages_fts USING fts5(
    content,
    content = 'messages',
    content_rowid = 'pos',
    tokenize = 'trigram'
);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, content) VALUES (NEW.pos, NEW.content);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', OLD.pos, OLD.content);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', OLD.pos, OLD.content);
    INSERT INTO messages_fts (rowid, content) VALUES (NEW.pos, NEW.content);
END;
-- Messages written before this migration.
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
