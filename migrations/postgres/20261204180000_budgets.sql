-- Cost of a run beside its token counts (docs/api.md usage.cost_usd, in nano-dollars) and the
-- number of its calls whose model has no price.
ALTER TABLE runs ADD COLUMN cost_nanos BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN unpriced_calls BIGINT NOT NULL DEFAULT 0;

-- A tenant's spend in one UTC calendar window (docs/configuration.md [[budgets]]): what settled
-- calls used, and what calls in flight reserved. A call reserves with one conditional upsert
-- (spent + reserved + its worst case within the limit), so instances sharing the database never
-- admit more than the limit plus the reservations in flight. `warned`: the warning threshold
-- was logged for this window.
CREATE TABLE budget_windows (
    tenant          TEXT NOT NULL,
    window_kind     TEXT NOT NULL,
    starts_at       BIGINT NOT NULL,
    spent_tokens    BIGINT NOT NULL DEFAULT 0,
    spent_nanos     BIGINT NOT NULL DEFAULT 0,
    reserved_tokens BIGINT NOT NULL DEFAULT 0,
    reserved_nanos  BIGINT NOT NULL DEFAULT 0,
    warned          BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, window_kind, starts_at)
);

-- One reservation of a call in flight: released by its settlement, or, if its run's process
-- died, when the run is recovered or found finished (windows = "kind:starts_at" list).
CREATE TABLE budget_holds (
    id         TEXT PRIMARY KEY NOT NULL,
    run_id     TEXT NOT NULL,
    tenant     TEXT NOT NULL,
    windows    TEXT NOT NULL,
    tokens     BIGINT NOT NULL,
    nanos      BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX budget_holds_run ON budget_holds (run_id);

-- The usage of every LLM call of a run, kept apart from runs (a deleted conversation does not
-- take its spend with it), for GET /api/usage.
CREATE TABLE llm_usage (
    id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant             TEXT NOT NULL,
    at                 BIGINT NOT NULL,
    run_id             TEXT NOT NULL,
    model              TEXT NOT NULL,
    agent              TEXT NOT NULL,
    prompt_tokens      BIGINT NOT NULL,
    completion_tokens  BIGINT NOT NULL,
    cache_read_tokens  BIGINT NOT NULL DEFAULT 0,
    cache_write_tokens BIGINT NOT NULL DEFAULT 0,
    cost_nanos         BIGINT NOT NULL,
    unpriced           BIGINT NOT NULL
);
CREATE INDEX llm_usage_tenant_at ON llm_usage (tenant, at);
