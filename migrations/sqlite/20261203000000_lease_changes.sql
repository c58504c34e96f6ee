-- How many times any run's lease epoch has changed (takeovers), bumped by a trigger whichever
-- code path or process changes one. The event writer checks the epochs of the runs it writes
-- (fencing, docs/deployment.md) only for runs it has not verified since this count last moved: SQLite
-- runs one write transaction at a time, so an unchanged count read inside the writer's
-- transaction proves every verified epoch still holds. Checking 1,000 runs' epochs in every
-- tick was ~35 % of the writer's cost (BENCHMARKS.md, "Session 14").
CREATE TABLE lease_changes (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
INSERT INTO lease_changes (id, n) VALUES (1, 0);
CREATE TRIGGER runs_lease_epoch_changes AFTER UPDATE OF lease_epoch ON runs
    WHEN NEW.lease_epoch IS NOT OLD.lease_epoch
BEGIN
    UPDATE lease_changes SET n = n + 1 WHERE id = 1;
END;
