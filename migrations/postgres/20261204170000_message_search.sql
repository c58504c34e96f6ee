-- Search over message text (`GET /api/conversations?q=`, docs/api.md): a trigram index on
-- every message's content, which serves `content ILIKE '%word%'` (a substring, any case) for
-- words of three characters or more; the SQLite side has the same semantics through FTS5's
-- trigram tokenizer. pg_trgm ships with PostgreSQL (contrib) and is a trusted extension since
-- PostgreSQL 13, so the database owner may create it (docs/deployment.md).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX messages_content_trgm ON messages USING gin (content gin_trgm_ops);
