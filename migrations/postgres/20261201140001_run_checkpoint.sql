-- A running run's last checkpoint: see the SQLite migration of the same name.
ALTER TABLE runs ADD COLUMN checkpoint TEXT;
