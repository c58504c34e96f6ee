-- Set when a run's owner begins to end it (docs/deployment.md): commands for the run are refused from
-- then on, so the owner reads every command accepted before its `done` is built. A takeover
-- clears it.
ALTER TABLE runs ADD COLUMN closing BOOLEAN NOT NULL DEFAULT FALSE;
