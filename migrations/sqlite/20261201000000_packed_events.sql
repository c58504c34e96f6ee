-- A row of `events` may hold several consecutive events of one run with the same name (an
-- answer's deltas, mostly): `n` events numbered `seq`, `seq + 1`, …, their data joined by a
-- newline (event data is one-line JSON; an event whose data has a newline keeps a row of its
-- own). Streaming 1,000 answers wrote ~5 rows per run per commit of the event writer; packing
-- them cuts the B-tree inserts, index entries and conflict checks by as much (BENCHMARKS.md,
-- "Persistence throughput"). Existing rows are single events.
ALTER TABLE events ADD COLUMN n INTEGER NOT NULL DEFAULT 1 CHECK (n >= 1);
