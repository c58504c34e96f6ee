//! [`History`]: a run's message list, shared with every provider request built from it, with
//! its token estimate kept up to date as messages are appended.
//!
//! Each loop iteration used to clone the whole list into its request and re-estimate every
//! message before the call, so an iteration cost grew with the history. Now a request holds a
//! reference to the same list (`Arc`), and an append writes in place once that request is gone
//! (`Arc::make_mut` copies only while a request from before is still alive, e.g. a test double
//! that records requests); the estimate adds the new message's tokens only.

use std::ops::Deref;
use std::sync::Arc;

use super::estimate::{estimate_message_tokens, message_tokens};
use crate::agent::checkpoint::{CheckpointJson, JsonList};
use crate::llm::Message;

#[derive(Clone, Debug, Default)]
pub struct History {
    messages: Arc<Vec<Message>>,
    /// `estimate_message_tokens(&messages)`, kept by every change.
    tokens: usize,
    /// The messages' JSON for checkpoints (only appended to, as the list is).
    json: JsonList,
}

impl History {
    pub fn new(messages: Vec<Message>) -> Self {
        let tokens = estimate_message_tokens(&messages);
        Self {
            messages: Arc::new(messages),
            tokens,
            json: JsonList::default(),
        }
    }

    /// Appends `message` (in place unless an earlier [`Self::shared`] is still held).
    pub fn push(&mut self, message: Message) {
        self.tokens += message_tokens(&message);
        Arc::make_mut(&mut self.messages).push(message);
    }

    /// The list as a request takes it: a reference, not a copy.
    pub fn shared(&self) -> Arc<Vec<Message>> {
        Arc::clone(&self.messages)
    }

    /// Estimated tokens of the messages ([`estimate_message_tokens`]), without walking them.
    pub fn tokens(&self) -> usize {
        debug_assert_eq!(self.tokens, estimate_message_tokens(&self.messages));
        self.tokens
    }

    /// Writes the messages as a JSON array, serialising only those appended since the last
    /// call once the history is long, and sharing what it kept ([`JsonList`]).
    pub fn write_json(&mut self, out: &mut CheckpointJson) -> serde_json::Result<()> {
        self.json.write(&self.messages, out)
    }

    pub fn into_vec(self) -> Vec<Message> {
        Arc::unwrap_or_clone(self.messages)
    }
}

impl From<Vec<Message>> for History {
    fn from(messages: Vec<Message>) -> Self {
        Self::new(messages)
    }
}

impl Deref for History {
    type Target = [Message];

    fn deref(&self) -> &[Message] {
        &self.messages
    }
}

#[cfg(test)]
mod tests;
