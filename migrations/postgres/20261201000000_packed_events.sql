-- Several consecutive events of one run with the same name per row: see the SQLite migration
-- of the same name for why. Existing rows are single events.
ALTER TABLE events ADD COLUMN n BIGINT NOT NULL DEFAULT 1 CHECK (n >= 1);
