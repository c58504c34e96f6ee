-- A running run's last checkpoint (JSON: the loop's messages, step records, counters and the
-- tool calls in flight), written with its events after every iteration, so a restart resumes
-- the run instead of failing it (docs/deployment.md). NULL: none yet, or an older run.
ALTER TABLE runs ADD COLUMN checkpoint TEXT;
