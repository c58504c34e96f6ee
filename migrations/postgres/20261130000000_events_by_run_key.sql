-- Events are stored in insertion order and found through a small per-run integer key: the
-- same layout as SQLite's (see its migration for why), so both backends share the SQL.

CREATE TABLE run_keys (
    key    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE REFERENCES runs (id) ON DELETE CASCADE
);
INSERT INTO run_keys (run_id) SELECT id FROM runs ORDER BY started_at, id;

-- Every run gets its key when it is inserted, whichever code path inserts it.
CREATE FUNCTION runs_key() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO run_keys (run_id) VALUES (NEW.id);
    RETURN NULL;
END
$$;
CREATE TRIGGER runs_key AFTER INSERT ON runs FOR EACH ROW EXECUTE FUNCTION runs_key();

CREATE TABLE events_by_key (
    id   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run  BIGINT NOT NULL REFERENCES run_keys (key) ON DELETE CASCADE,
    seq  BIGINT NOT NULL,
    name TEXT NOT NULL,
    data TEXT NOT NULL
);
INSERT INTO events_by_key (run, seq, name, data)
    SELECT k.key, e.seq, e.name, e.data
    FROM events e JOIN run_keys k ON k.run_id = e.run_id
    ORDER BY k.key, e.seq;
DROP TABLE events;
ALTER TABLE events_by_key RENAME TO events;
CREATE UNIQUE INDEX events_run_seq ON events (run, seq);
