-- The agent (docs/protocols.md, `[[agents]]` name) a conversation was created with; its settings apply to
-- the conversation's runs. NULL: no agent (the conversation's own model, prompt and tools).
ALTER TABLE conversations ADD COLUMN agent TEXT;
