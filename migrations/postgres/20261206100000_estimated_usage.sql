-- Calls whose provider reported no usage (absent, zero, negative or null counts) are charged
-- reagent's estimate and counted here, as unpriced calls are (docs/api.md "Budgets and usage").
ALTER TABLE runs ADD COLUMN estimated_calls BIGINT NOT NULL DEFAULT 0;
ALTER TABLE llm_usage ADD COLUMN estimated BIGINT NOT NULL DEFAULT 0;
