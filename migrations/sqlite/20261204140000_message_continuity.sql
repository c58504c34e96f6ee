-- What a thinking model's provider sent with an answer beyond its text (reasoning, opaque
-- signatures), as the JSON of reagent's `Continuity`: sent back with the message to the model
-- that produced it, in later runs of the conversation. NULL for every other message.
ALTER TABLE messages ADD COLUMN continuity TEXT;
