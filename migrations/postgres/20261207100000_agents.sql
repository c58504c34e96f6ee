-- Agents managed at run time (docs/api.md "Agents"): one row per tenant and name, and its
-- immutable versions. A deleted agent keeps its row and versions, so the conversations pinned
-- to one of them keep running; a new POST of the name revives it with the next version.
CREATE TABLE agents (
    owner          TEXT NOT NULL,
    name           TEXT NOT NULL,
    latest_version BIGINT NOT NULL,
    deleted        BIGINT NOT NULL DEFAULT 0,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL,
    PRIMARY KEY (owner, name)
);

CREATE TABLE agent_versions (
    owner      TEXT NOT NULL,
    name       TEXT NOT NULL,
    version    BIGINT NOT NULL,
    spec       TEXT NOT NULL,                 -- JSON: the agent's fields as given
    created_at BIGINT NOT NULL,
    PRIMARY KEY (owner, name, version),
    FOREIGN KEY (owner, name) REFERENCES agents (owner, name) ON DELETE CASCADE
);

-- The version of an API agent a conversation runs on; NULL for a configured agent or none.
ALTER TABLE conversations ADD COLUMN agent_version BIGINT;
