-- reagent schema, PostgreSQL flavour. Ids are UUID text; times are BIGINT microseconds since the
-- Unix epoch (UTC) so ordering and cursors compare exactly and the SQL is shared with PostgreSQL.

CREATE TABLE conversations (
    id            TEXT PRIMARY KEY NOT NULL,
    owner         TEXT NOT NULL,
    title         TEXT,
    model         TEXT,
    system_prompt TEXT,
    tools         TEXT,                      -- JSON array of tool names
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);
CREATE INDEX conversations_owner_updated ON conversations (owner, updated_at DESC, id DESC);

CREATE TABLE messages (
    pos             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,   -- insertion order, ties impossible
    id              TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    role            TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    kind            TEXT NOT NULL CHECK (kind IN ('query', 'interrupt', 'answer')),
    content         TEXT NOT NULL,
    run_id          TEXT,
    created_at      BIGINT NOT NULL
);
CREATE INDEX messages_conversation ON messages (conversation_id, pos);

CREATE TABLE runs (
    id                TEXT PRIMARY KEY NOT NULL,
    conversation_id   TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    owner             TEXT NOT NULL,
    status            TEXT NOT NULL,
    mode              TEXT NOT NULL,
    model             TEXT NOT NULL,
    iterations        BIGINT NOT NULL DEFAULT 0,
    tool_calls        BIGINT NOT NULL DEFAULT 0,
    prompt_tokens     BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    total_tokens      BIGINT NOT NULL DEFAULT 0,
    llm_calls         BIGINT NOT NULL DEFAULT 0,
    started_at        BIGINT NOT NULL,
    finished_at       BIGINT,
    error             TEXT
);
CREATE INDEX runs_conversation ON runs (conversation_id);
-- At most one active run per conversation, enforced by the database itself (docs/api.md run_active).
CREATE UNIQUE INDEX runs_one_running ON runs (conversation_id) WHERE status = 'running';

CREATE TABLE events (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq    BIGINT NOT NULL,
    name   TEXT NOT NULL,
    data   TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE tool_audit (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id          TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    conversation_id TEXT NOT NULL,
    call_id         TEXT NOT NULL,
    tool            TEXT NOT NULL,
    arguments       TEXT NOT NULL,            -- JSON
    result_size     BIGINT NOT NULL,
    duration_ms     BIGINT NOT NULL,
    outcome         TEXT NOT NULL,
    at              BIGINT NOT NULL
);
CREATE INDEX tool_audit_run ON tool_audit (run_id, id);

CREATE TABLE artifacts (
    id         TEXT PRIMARY KEY NOT NULL,
    run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    owner      TEXT NOT NULL,
    name       TEXT NOT NULL,
    mime_type  TEXT NOT NULL,
    size       BIGINT NOT NULL,
    data       BYTEA NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX artifacts_run ON artifacts (run_id);
