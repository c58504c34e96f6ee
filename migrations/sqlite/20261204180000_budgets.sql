-- Cost of a run beside its token counts (docs/api.md usage.cost_usd, in nano-dollars) and the
-- number of its calls whose model has no price.
ALTER TABLE runs ADD COLUMN cost_nanos INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN unpriced_calls INTEGER NOT NULL DEFAULT 0;

-- A tenant's spend in one UTC calendar window (docs/configuration.md [[budgets]]): what settled
-- calls used, and what calls in flight reserved. A call reserves with one conditional upsert
-- (spent + reserved + its worst case within the limit), so instances sharing the database never
-- admit more than the limit plus the reservations in flight. `warned`: the warning threshold
-- was logged for this window.
CREATE TABLE budget_windows (
    tenant          TEXT NOT NULL,
    window_kind     TEXT NOT NULL,
    starts_at       INTEGER NOT NULL,
    spent_tokens    INTEGER NOT NULL DEFAULT 0,
    spent_nanos     INTEGER NOT NULL DEFAULT 0,
    reserved_tokens INTEGER NOT NULL DEFAULT 0,
    reserved_nanos  INTEGER NOT NULL DEFAULT 0,
    warned          INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, window_kind, starts_at)
);

-- One reservation of a call in flight: released by its settlement, or, if its run's process
-- died, when the run is recovered or found finished (windows = "kind:starts_at" list).
CREATE TABLE budget_holds (
    id         TEXT PRIMARY KEY NOT NULL,
    run_id     TEXT NOT NULL,
    tenant     TEXT NOT NULL,
    windows    TEXT NOT NULL,
    tokens     INTEGER NOT NULL,
    nanos      INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX budget_holds_run ON budget_holds (run_id);

-- The usage of every LLM call of a run, kept apart from runs (a deleted conversation does not
-- take its spend with it), for GET /api/usage.
CREATE TABLE llm_usage (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant             TEXT NOT NULL,
    at                 INTEGER NOT NULL,
    run_id             TEXT NOT NULL,
    model              TEXT NOT NULL,
    agent              TEXT NOT NULL,
    prompt_tokens      INTEGER NOT NULL,
    completion_tokens  INTEGER NOT NULL,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_nanos         INTEGER NOT NULL,
    unpriced           INTEGER NOT NULL
);
CREATE INDEX llm_usage_tenant_at ON llm_usage (tenant, at);
