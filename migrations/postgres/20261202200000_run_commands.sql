-- Commands for a run sent through any instance (docs/deployment.md): see the SQLite migration of the
-- same name.
CREATE TABLE run_commands (
    seq        BIGSERIAL PRIMARY KEY,
    run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    target     TEXT,
    content    TEXT,
    created_at BIGINT NOT NULL,
    done_at    BIGINT,
    result     TEXT
);
CREATE INDEX run_commands_pending ON run_commands (run_id, seq) WHERE done_at IS NULL;

CREATE TABLE approvals (
    id           TEXT PRIMARY KEY NOT NULL,
    run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    owner        TEXT NOT NULL,
    info         TEXT NOT NULL,
    requested_at BIGINT NOT NULL,
    decision     TEXT,
    reason       TEXT,
    decided_at   BIGINT
);
CREATE INDEX approvals_pending ON approvals (owner, requested_at) WHERE decision IS NULL;
