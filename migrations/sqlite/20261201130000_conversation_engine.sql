-- DAG mode: the engine a conversation's runs use; NULL means REAGENT_DEFAULT_ENGINE.
ALTER TABLE conversations ADD COLUMN engine TEXT;
