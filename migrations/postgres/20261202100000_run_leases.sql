-- Leases (docs/deployment.md): the instance running a run, the epoch its writes are fenced by, and the
-- expiry (µs since the Unix epoch; NULL = lapsed) after which another instance takes it.
ALTER TABLE runs ADD COLUMN lease_owner TEXT;
ALTER TABLE runs ADD COLUMN lease_epoch BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN lease_until BIGINT;
-- The sweeper's scan and `GET /api/instances`' counts read only running runs.
CREATE INDEX runs_running_lease ON runs (lease_until) WHERE status = 'running';
CREATE INDEX runs_running_owner ON runs (lease_owner) WHERE status = 'running';
-- One row per live instance, heartbeated with its lease renewals.
CREATE TABLE instances (
    id TEXT PRIMARY KEY,
    started_at BIGINT NOT NULL,
    last_seen BIGINT NOT NULL
);
