-- Forks (docs/api.md): the conversation and run a conversation was forked from. Plain text, no
-- foreign key: a fork outlives the conversation it came from.
ALTER TABLE conversations ADD COLUMN forked_from_conversation TEXT;
ALTER TABLE conversations ADD COLUMN forked_from_run TEXT;

-- The Responses API (docs/protocols.md): what a response's request asked for, as JSON (echoed
-- settings and the normalised input items), one row per run that the API started.
CREATE TABLE responses (
    run_id  TEXT PRIMARY KEY NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    request TEXT NOT NULL
);
