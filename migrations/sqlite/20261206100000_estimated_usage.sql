-- Calls whose provider reported no usage (absent, zero, negative or null counts) are charged
-- reagent's estimate and counted here, as unpriced calls are (docs/api.md "Budgets and usage").
ALTER TABLE runs ADD COLUMN estimated_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE llm_usage ADD COLUMN estimated INTEGER NOT NULL DEFAULT 0;
