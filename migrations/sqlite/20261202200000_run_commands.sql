-- Commands for a run sent through an instance that does not run it (docs/deployment.md): `interrupt`
-- (target = the stored interrupt message, content its text), `recall` (target = the message;
-- `result` = recalled | not_pending | not_found, written by the owner), `cancel`. The owner
-- does each once, in `seq` order, and marks it `done_at`. One process (SQLite) never writes
-- them; the table exists so both backends share one schema.
CREATE TABLE run_commands (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    target     TEXT,
    content    TEXT,
    created_at INTEGER NOT NULL,
    done_at    INTEGER,
    result     TEXT
);
CREATE INDEX run_commands_pending ON run_commands (run_id, seq) WHERE done_at IS NULL;

-- Pending approvals (docs/api.md) as rows, so any instance lists and decides them: written by
-- the run's owner when its hook asks (`info` = the request as JSON), decided once by
-- `UPDATE … WHERE decision IS NULL` (approved | rejected | timed_out | abandoned: its run was
-- taken over, the resumed run asks again).
CREATE TABLE approvals (
    id           TEXT PRIMARY KEY NOT NULL,
    run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    owner        TEXT NOT NULL,
    info         TEXT NOT NULL,
    requested_at INTEGER NOT NULL,
    decision     TEXT,
    reason       TEXT,
    decided_at   INTEGER
);
CREATE INDEX approvals_pending ON approvals (owner, requested_at) WHERE decision IS NULL;
