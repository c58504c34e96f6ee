-- The run's span as a W3C `traceparent` while tracing is on (docs/deployment.md): a run
-- resumed after a restart or taken over by another instance continues the same trace. NULL
-- when tracing was off as the run started.
ALTER TABLE runs ADD COLUMN traceparent TEXT;
