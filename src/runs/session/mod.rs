//! Sessions: how a request of any API meets conversations and runs, so each API's handler only
//! translates its wire format. The verbs, one file each:
//!
//! - `attach` — [`RunManager::attach`]: a request's run on its [`Thread`]: a new conversation,
//!   a stored one, a client's own thread id (its resent history reduced to what is new), or
//!   "after run X" (X's conversation while X is its latest run, else a fork at X, removed
//!   again if the start fails); a facade's record is stored in the run's start transaction;
//! - `answer` — [`RunManager::answer`]: a waiting run answered ([`Answer`]): caller-tool
//!   outputs start its continuation, approval decisions let it go on;
//! - `stop` — [`RunManager::stop_and_wait`]: cancel a run and wait for its end (its own
//!   completion here, followed through its events when another instance runs it);
//! - `delete` — [`RunManager::delete_run`]: a finished run, its events and the messages it
//!   wrote (a running one stopped first);
//! - `record` — a facade's record read back with its run, and a run's stored events;
//! - `client` — a client's thread id as a conversation, and what of a resent history is new.

mod answer;
mod attach;
mod client;
mod delete;
mod record;
mod stop;
#[cfg(test)]
mod tests;

use uuid::Uuid;

use super::core::history::PriorTurn;
use crate::agent::caller_tools::ToolOutput;
use crate::llm::ToolDefinition;
use crate::store::NewConversation;

pub use client::{conversation_of, new_images, new_query};

/// Which thread a request continues.
#[derive(Clone, Debug)]
pub enum Thread {
    /// A new conversation with these settings, seeded with the ask's history.
    New(NewConversation),
    /// A stored conversation of the caller's.
    Conversation(Uuid),
    /// A client's own thread id for `agent` (a UUID names any conversation; another id, one of
    /// the caller's), its conversation made on first use. `turns` is the client's whole
    /// history as it resent it: what the conversation does not hold yet is the query.
    Client {
        id: String,
        agent: String,
        turns: Vec<PriorTurn>,
    },
    /// After run X: X's conversation while X is its latest run, else a fork of it at X.
    After(Uuid),
}

/// What a request asks, whichever thread it continues.
#[derive(Clone, Debug, Default)]
pub struct Ask {
    pub query: String,
    /// Turns before the query a new conversation is seeded with (only with [`Thread::New`]).
    pub history: Vec<PriorTurn>,
    /// The query's images as URLs.
    pub images: Vec<String>,
    /// Caller tools the run may call.
    pub client_tools: Vec<ToolDefinition>,
    /// A section appended to this run's system prompt.
    pub context: Option<String>,
    /// The agent an existing conversation must run.
    pub agent: Option<String>,
    /// The facade's record of the request (JSON), stored in the run's start transaction.
    pub record: Option<String>,
}

/// A waiting run's answer.
#[derive(Clone, Debug)]
pub enum Answer {
    /// Outputs of the caller-tool calls it waits for: they start its continuation.
    Outputs(Vec<ToolOutput>),
    /// Decisions on the approvals it waits on (every one the client was told about).
    Approvals(Vec<Decision>),
}

/// A client's decision on an approval a run waits on.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub id: String,
    pub approve: bool,
    pub reason: Option<String>,
}

/// What an answer did.
#[derive(Debug)]
pub enum Answered {
    /// A continuation started (caller-tool outputs).
    Continued(super::Started),
    /// The run goes on (approvals): its events after `after` are the client's next.
    Resumed {
        run_id: Uuid,
        conversation_id: Uuid,
        after: u64,
    },
}
