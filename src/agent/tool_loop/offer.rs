//! What a run's model is first given: the system prompt, the tools it is offered (natively
//! or described in the prompt, the caller's beside the run's own), and the first messages.

use std::sync::Arc;

use crate::agent::events::Mode;
use crate::agent::prompts;
use crate::agent::run::RunInput;
use crate::llm::{Message, ToolDefinition};

/// What the model is offered: the system prompt, and the tools (the run's and the caller's)
/// as native tool definitions or, in JSON mode, described to it in the prompt.
pub(super) struct Offered {
    pub system: String,
    pub native: Arc<[ToolDefinition]>,
    pub json: Arc<[ToolDefinition]>,
}

impl Offered {
    pub fn new(
        own: Arc<[ToolDefinition]>,
        client: &[ToolDefinition],
        mode: Mode,
        role: &str,
    ) -> Self {
        let defs: Arc<[ToolDefinition]> = if client.is_empty() {
            own
        } else {
            own.iter().chain(client.iter()).cloned().collect()
        };
        match mode {
            Mode::Native => Self {
                system: prompts::native_system_prompt(role),
                native: defs,
                json: Arc::default(),
            },
            Mode::Json => Self {
                system: prompts::json_system_prompt(role, &defs),
                native: Arc::default(),
                json: defs,
            },
        }
    }
}

/// The run's first messages: the system prompt, the history, the query (kept through
/// compaction).
pub(super) fn first_messages(system: String, input: &RunInput) -> Vec<Message> {
    let mut messages = Vec::with_capacity(input.history.len() + 8);
    messages.push(Message::system(system));
    messages.extend(input.history.iter().cloned());
    messages.push(
        Message::user(input.query.clone())
            .with_images(input.images.clone())
            .pinned(),
    );
    messages
}
