-- The prompt-cache counts of a run's usage: prompt tokens the provider read from its cache, and
-- prompt tokens it wrote to it (both part of prompt_tokens; 0 when the provider said nothing).
ALTER TABLE runs ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
