//! What both front-end protocols do with a request before encoding anything: it names the
//! client's thread (chat) id, its whole history, and either a new question, the outputs of
//! caller tools or the answers to approvals; the session layer (`runs::session`) maps that
//! onto conversations and runs, and the stream follows the run it names.

use std::sync::Arc;

use futures::stream::BoxStream;
use uuid::Uuid;

use crate::agent::caller_tools::ToolOutput;
use crate::domain::MessageRole;
use crate::llm::ToolDefinition;
use crate::runs::session::{Answer, Answered, Ask, Decision, Thread};
use crate::runs::{LoggedEvent, PriorTurn};
use crate::server::state::AppState;
use crate::server::ApiError;

pub use crate::runs::session::conversation_of;

/// `Ok` when `agent` is one of `owner`'s agents: a configured one or its tenant's own; any
/// other name (another tenant's agent included) is `404`.
pub async fn require_agent(state: &AppState, owner: &str, agent: &str) -> Result<(), ApiError> {
    match state.runs.catalog().get(owner, agent, None).await? {
        Some(_) => Ok(()),
        None => Err(ApiError::NotFound),
    }
}

/// One turn of the client's history, as far as reagent reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientTurn {
    pub role: MessageRole,
    pub text: String,
    /// A user turn's image URLs (`data:` or `http(s)`).
    pub images: Vec<String>,
}

/// A client's answer to an approval a run waits on.
pub type ApprovalAnswer = Decision;

/// What a front-end request asks for, protocol aside.
#[derive(Debug)]
pub struct FrontRequest {
    pub agent: String,
    pub thread: String,
    /// The client's whole history, oldest first (user and assistant text only).
    pub turns: Vec<ClientTurn>,
    /// Extra context for this run (AG-UI `context`), a section of its system prompt.
    pub context: Option<String>,
    /// Answers to open approvals: when present, no run starts.
    pub answers: Vec<ApprovalAnswer>,
    /// Caller tools the run may call (the client runs them).
    pub tools: Vec<ToolDefinition>,
    /// Outputs of the caller tool calls the thread's latest run waits for: when present, they
    /// start its continuation instead of a new run.
    pub outputs: Vec<ToolOutput>,
}

/// The run a front-end stream follows.
pub struct Attached {
    pub run_id: Uuid,
    pub conversation_id: Uuid,
    pub events: BoxStream<'static, Arc<LoggedEvent>>,
    /// The stream goes on after answered approvals (no `start` follows).
    pub resumed: bool,
}

/// Starts the run a request asks for, or answers the run its thread waits on, and follows it.
pub async fn begin(state: &AppState, owner: &str, req: FrontRequest) -> Result<Attached, ApiError> {
    let answer = match (req.outputs.is_empty(), req.answers.is_empty()) {
        (false, _) => Some(Answer::Outputs(req.outputs)),
        (true, false) => Some(Answer::Approvals(req.answers)),
        (true, true) => None,
    };
    let turns = req
        .turns
        .into_iter()
        .map(|t| PriorTurn {
            images: t.images,
            ..PriorTurn::text(t.role, t.text)
        })
        .collect();
    let thread = Thread::Client {
        id: req.thread,
        agent: req.agent,
        turns,
    };
    if let Some(answer) = answer {
        return match state.runs.answer(owner, &thread, answer, None).await? {
            Answered::Continued(started) => Ok(Attached {
                run_id: started.live.id,
                conversation_id: started.live.conversation_id,
                events: state.runs.live_events(&started.live, 0),
                resumed: true,
            }),
            Answered::Resumed {
                run_id,
                conversation_id,
                after,
            } => Ok(Attached {
                run_id,
                conversation_id,
                events: state.runs.events(owner, run_id, after).await?,
                resumed: true,
            }),
        };
    }
    let ask = Ask {
        client_tools: req.tools,
        context: req.context,
        ..Ask::default()
    };
    let live = state.runs.attach(owner, thread, ask).await?.live;
    Ok(Attached {
        run_id: live.id,
        conversation_id: live.conversation_id,
        events: state.runs.live_events(&live, 0),
        resumed: false,
    })
}
