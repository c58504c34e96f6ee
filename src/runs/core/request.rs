//! What a client asks for when it starts a run ([`StartRun`]), whichever API it came through;
//! [`RunManager::start`](super::RunManager::start) checks and starts it.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::history::PriorTurn;
use super::manager::LiveRun;
use crate::agent::Mode;
use crate::domain::Engine;
use crate::llm::ToolDefinition;
use crate::store::NewConversation;

/// Which conversation a run belongs to.
#[derive(Clone, Debug)]
pub enum ConversationRef {
    /// A stored conversation of the caller's.
    Existing(Uuid),
    /// A new conversation, checked like `POST /api/conversations` and stored with its first
    /// run in one transaction: nothing is stored if the start fails.
    New(NewConversation),
}

impl ConversationRef {
    /// A new conversation titled after the query ([`title_after`], `POST /api/chat`).
    pub fn titled_after(query: &str, model: Option<String>) -> Self {
        Self::New(NewConversation {
            title: Some(title_after(query)),
            model,
            ..NewConversation::default()
        })
    }
}

/// Most characters of a title made from a query.
const DERIVED_TITLE_CHARS: usize = 80;

/// The title of a conversation a query starts: its words, cut with an ellipsis when longer than
/// 80 characters (a cut title read as the whole one, and its forks looked the same).
pub fn title_after(query: &str) -> String {
    let words = query.split_whitespace().collect::<Vec<_>>().join(" ");
    if words.chars().count() <= DERIVED_TITLE_CHARS {
        return words;
    }
    let cut: String = words.chars().take(DERIVED_TITLE_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// What a client asked for.
#[derive(Clone, Debug)]
pub struct StartRun {
    pub conversation: ConversationRef,
    pub query: String,
    /// A configured model name; the conversation's model, else the default, when absent.
    pub model: Option<String>,
    /// A forced mode; the engine decides when absent.
    pub mode: Option<Mode>,
    pub max_iterations: Option<u32>,
    /// The engine; the conversation's, else `REAGENT_DEFAULT_ENGINE`, when absent.
    pub engine: Option<Engine>,
    /// The run's id, when it was announced before the run started (a `done.next_run_id`).
    pub id: Option<Uuid>,
    /// Stored follow-ups this run's query is made of: they leave the history it reads, and the
    /// conversation, once its query is stored.
    pub replaces: Vec<Uuid>,
    /// Turns before the query (oldest first) a new conversation is seeded with: stored with
    /// it, and the history the run reads. Only with [`ConversationRef::New`].
    pub history: Vec<PriorTurn>,
    /// The agent the caller expects an existing conversation to run (`/v1`'s `model`): a
    /// conversation of another agent is refused with [`RunError::AgentMismatch`] rather than
    /// run under a name that is not what ran.
    pub agent: Option<String>,
    /// Tools the caller executes (docs/api.md "Caller tools"); any API passes them here.
    pub client_tools: Vec<ToolDefinition>,
    /// The id of the new conversation ([`ConversationRef::New`] only; fresh when absent): a
    /// front end's own thread id names it (docs/protocols.md).
    pub conversation_id: Option<Uuid>,
    /// The query's images as URLs (`data:` or `http(s)`, docs/api.md "Images").
    pub images: Vec<String>,
    /// A section appended to this run's system prompt (a front end's `context`), not stored
    /// with the conversation: later runs do not see it.
    pub context: Option<String>,
    /// Start only while this run is still the conversation's latest (a response after
    /// `previous_response_id`, docs/protocols.md), checked in the start's transaction: else
    /// nothing is stored and the start fails as a busy conversation would.
    pub after_run: Option<Uuid>,
    /// What the request asked for as the API that took it keeps it (JSON), stored beside the
    /// run in its start transaction: a run is never seen without it.
    pub record: Option<String>,
}

/// A run just started, with its `started_at` as stored (so no caller reads the run back).
#[derive(Debug, Clone)]
pub struct Started {
    pub live: Arc<LiveRun>,
    pub started_at: DateTime<Utc>,
}

impl Started {
    pub(in crate::runs) fn at(live: Arc<LiveRun>, micros: i64) -> Self {
        // Infallible: the micros were just produced from the clock.
        let started_at = DateTime::from_timestamp_micros(micros).unwrap_or_default();
        Self { live, started_at }
    }
}

impl StartRun {
    /// A run of `query` in `conversation`, everything else as configured.
    pub fn new(conversation: ConversationRef, query: impl Into<String>) -> Self {
        Self {
            conversation,
            query: query.into(),
            model: None,
            mode: None,
            max_iterations: None,
            engine: None,
            id: None,
            replaces: Vec::new(),
            history: Vec::new(),
            agent: None,
            client_tools: Vec::new(),
            conversation_id: None,
            images: Vec::new(),
            context: None,
            after_run: None,
            record: None,
        }
    }
}
