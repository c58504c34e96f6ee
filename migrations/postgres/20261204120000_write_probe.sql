-- One row that `/readyz` rewrites while the database's writes are failing (a full disk, an I/O
-- error): readiness comes back only once a real write commits again.
CREATE TABLE write_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at BIGINT NOT NULL
);
INSERT INTO write_probe (id, at) VALUES (1, 0);
