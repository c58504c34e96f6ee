-- DAG mode (SPEC §9): the engine a conversation's runs use; NULL means REAGENT_DEFAULT_ENGINE.
ALTER TABLE conversations ADD COLUMN engine TEXT;
