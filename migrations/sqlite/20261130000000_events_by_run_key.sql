-- Events are stored in insertion order and found through a small per-run integer key.
--
-- The first layout clustered events by (run_id TEXT, seq): every commit of the shared event
-- writer touched one B-tree leaf per live run, and each index entry carried the 36-byte UUID.
-- With thousands of runs streaming, that cost ~17 µs of SQLite time per event. Appending rows
-- to a rowid table and indexing (small integer, seq) costs about a third of that
-- (BENCHMARKS.md, "Persistence throughput").

-- A stable integer per run (INTEGER PRIMARY KEY survives VACUUM; a plain rowid would not).
CREATE TABLE run_keys (
    key    INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE REFERENCES runs (id) ON DELETE CASCADE
);
INSERT INTO run_keys (run_id) SELECT id FROM runs ORDER BY started_at, id;
-- Every run gets its key when it is inserted, whichever code path inserts it.
CREATE TRIGGER runs_key AFTER INSERT ON runs BEGIN
    INSERT INTO run_keys (run_id) VALUES (NEW.id);
END;

CREATE TABLE events_by_key (
    id   INTEGER PRIMARY KEY,
    run  INTEGER NOT NULL REFERENCES run_keys (key) ON DELETE CASCADE,
    seq  INTEGER NOT NULL,
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
