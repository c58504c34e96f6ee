-- The highest event id a run may have shown to clients: ids are reserved in blocks committed
-- here before any id of the block is sent, so recovery (or a takeover) continues above it and
-- an id never names two different events (RELIABILITY.md, "Event ids"). 0 for older runs, whose
-- recovery continues above their last stored event as before.
ALTER TABLE runs ADD COLUMN event_ceiling INTEGER NOT NULL DEFAULT 0;
