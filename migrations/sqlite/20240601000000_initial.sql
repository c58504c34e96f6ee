-- reagent schema, SQLite flavour. Ids are UUID text; times are INTEGER microseconds since the
-- Unix epoch (UTC) so ordering and cursors compare exactly and the SQL is shared with PostgreSQL.

CREATE TABLE conversations (
    id            TEXT PRIMARY KEY NOT NULL,
    owner         TEXT NOT NULL,
    title         TEXT,
    model         TEXT,
    system_prompt TEXT,
    tools         TEXT,                      -- JSON array of tool names
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
CREATE INDEX conversations_owner_updated ON conversations (owner, updated_at DESC, id DESC);

CREATE TABLE messages (
    pos             INTEGER PRIMARY KEY AUTOINCREMENT,   -- insertion order, ties impossible
    id              TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    role            TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    kind            TEXT NOT NULL CHECK (kind IN ('query', 'interrupt', 'answer')),
    content         TEXT NOT NULL,
    run_id          TEXT,
    created_at      INTEGER NOT NULL
);
CREATE INDEX messages_conversation ON messages (conversation_id, pos);

CREATE TABLE runs (
    id                TEXT PRIMARY KEY NOT NULL,
    conversation_id   TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    owner             TEXT NOT NULL,
    status            TEXT NOT NULL,
    mode              TEXT NOT NULL,
    model             TEXT NOT NULL,
    iterations        INTEGER NOT NULL DEFAULT 0,
    tool_calls        INTEGER NOT NULL DEFAULT 0,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens      INTEGER NOT NULL DEFAULT 0,
    llm_calls         INTEGER NOT NULL DEFAULT 0,
    started_at        INTEGER NOT NULL,
    finished_at       INTEGER,
    error             TEXT
);
CREATE INDEX runs_conversation ON runs (conversation_id);
-- At most one active run per conversation, enforced by the database itself (docs/api.md run_active).
CREATE UNIQUE INDEX runs_one_running ON runs (conversation_id) WHERE status = 'running';

CREATE TABLE events (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq    INTEGER NOT NULL,
    name   TEXT NOT NULL,
    data   TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

CREATE TABLE tool_audit (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id          TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    conversation_id TEXT NOT NULL,
    call_id         TEXT NOT NULL,
    tool            TEXT NOT NULL,
    arguments       TEXT NOT NULL,            -- JSON
    result_size     INTEGER NOT NULL,
    duration_ms     INTEGER NOT NULL,
    outcome         TEXT NOT NULL,
    at              INTEGER NOT NULL
);
CREATE INDEX tool_audit_run ON tool_audit (run_id, id);

CREATE TABLE artifacts (
    id         TEXT PRIMARY KEY NOT NULL,
    run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    owner      TEXT NOT NULL,
    name       TEXT NOT NULL,
    mime_type  TEXT NOT NULL,
    size       INTEGER NOT NULL,
    data       BLOB NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX artifacts_run ON artifacts (run_id);
