//! The loop's replies under `synthesis = "auto"` and `"never"` (docs/configuration.md): each
//! call streams, a reply that may be the answer reaches the client while it is written, and
//! the reply that ends the loop is the answer when it passes the answer checks
//! (`crate::agent::answer`). A reply that turns out to call tools takes back what it showed
//! (`answer {status:"reset"}`; its text is the step's `thinking`). A reply to a safeguard's
//! prompt is not streamed, nor one the completion checklist is due to check, and — under every
//! policy — when it is only a verdict on the work the answer from before the prompt stands (or,
//! with none, the answer is written from the tool results). No step is sent while an answer
//! shows: a follow-up takes it back first.

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::agent::answer::{is_verdict, problem, AnswerStream, LoopAnswer, ReplyText};
use crate::agent::events::AnswerSource;
use crate::llm::{Continuity, Role, StreamEvent};

/// A reply that may be the answer, and why it cannot be as it is (`None`: it can).
#[derive(Clone, Debug)]
struct Candidate {
    text: String,
    problem: Option<&'static str>,
    /// What the provider sent with the reply beyond its text (stored with the answer).
    continuity: Option<Continuity>,
}

/// The loop's side of the answer.
#[derive(Debug)]
pub(super) struct Replies {
    /// `None` when replies do not stream (`synthesis = "always"`, a DAG step's loop).
    stream: Option<AnswerStream>,
    /// The safeguard whose prompt the next reply answers.
    prompted: Option<SafeguardKind>,
    /// The same for the reply being handled.
    answering: Option<SafeguardKind>,
    /// The answer the completion checklist holds back (still on the client's screen).
    held: Option<Candidate>,
    /// The reply that ended the loop.
    last: Option<Candidate>,
    /// Whether the checklist was done before the reply being handled.
    checklist_before: bool,
    /// The finish reason and continuity of the reply being handled.
    finish_reason: Option<String>,
    continuity: Option<Continuity>,
}

impl Replies {
    /// `stream`: where streamed replies go; `None` keeps the loop's calls unstreamed.
    pub(super) fn new(stream: Option<AnswerStream>) -> Self {
        Self {
            stream,
            prompted: None,
            answering: None,
            held: None,
            last: None,
            checklist_before: false,
            finish_reason: None,
            continuity: None,
        }
    }

    /// A safeguard's prompt was appended: the next reply answers it.
    pub(super) fn prompted(&mut self, kind: SafeguardKind) {
        if matches!(
            kind,
            SafeguardKind::Reflection
                | SafeguardKind::CycleWarning
                | SafeguardKind::CompletionCheck
        ) {
            self.prompted = Some(kind);
        }
    }

    /// The user's follow-ups were appended: the next reply answers them (not a safeguard's
    /// prompt alone), and an answer on the screen is set aside before their step shows.
    pub(super) fn heard_user(&mut self) {
        self.prompted = None;
        self.held = None;
        if let Some(stream) = &mut self.stream {
            stream.reset();
        }
    }

    /// One loop call: streamed when replies stream, else `chat`; cancellable either way.
    /// `checked`: a final reply would go to the completion checklist, so it is not shown yet
    /// (the answer the checklist settles streams when the loop ends).
    pub(super) async fn call(
        &mut self,
        llm: &dyn Llm,
        req: ChatRequest,
        mode: Mode,
        checked: bool,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, LlmError> {
        if let Some(kind) = self.prompted.take() {
            self.answering = Some(kind);
        }
        let Some(stream) = &mut self.stream else {
            return tokio::select! {
                _ = cancel.cancelled() => Err(LlmError::Cancelled),
                r = llm.chat(req) => r,
            };
        };
        if self.held.is_none() {
            // An answer the loop went on from (an interrupt came) is taken back.
            stream.reset();
        }
        let quiet = self.answering.is_some() || checked;
        streamed(llm, req, mode, quiet, stream, cancel).await
    }

    /// What the answer phase needs, when replies streamed: the stream, and the reply that
    /// ended the loop if it is the `brief` answer of a run ending with `status`.
    pub(super) fn into_answer(self, status: RunStatus, brief: &str) -> Option<LoopAnswer> {
        let stream = self.stream?;
        let reply = self.last.filter(|c| c.text == brief);
        let accepted = reply
            .as_ref()
            .filter(|c| c.problem.is_none() && status == RunStatus::Completed);
        let continuity = accepted.and_then(|c| c.continuity.clone());
        let accepted = accepted.map(|c| c.text.clone());
        if let Some(why) = reply.as_ref().and_then(|c| c.problem) {
            tracing::info!(
                problem = why,
                "the loop's last reply is not the answer as it is"
            );
        }
        Some(LoopAnswer {
            stream,
            accepted,
            continuity,
            brief_is_reply: reply.is_some(),
        })
    }
}

/// A streamed loop call: the reply assembled as `chat` returns it, its answer candidate sent
/// to `stream` while it is written unless `quiet` or a tool call came first.
async fn streamed(
    llm: &dyn Llm,
    req: ChatRequest,
    mode: Mode,
    quiet: bool,
    stream: &mut AnswerStream,
    cancel: &CancellationToken,
) -> Result<ChatResponse, LlmError> {
    let mut events = tokio::select! {
        _ = cancel.cancelled() => return Err(LlmError::Cancelled),
        s = llm.stream_chat(req) => s?,
    };
    let mut reply = ChatResponse {
        usage: Usage::call(0, 0),
        ..ChatResponse::default()
    };
    let mut reasoning = String::new();
    let mut text = ReplyText::new(mode);
    loop {
        let next = tokio::select! {
            _ = cancel.cancelled() => return Err(LlmError::Cancelled),
            n = events.next() => n,
        };
        match next {
            None => break,
            Some(Err(e)) => return Err(e),
            Some(Ok(StreamEvent::Content(c))) => {
                if !quiet && reply.tool_calls.is_empty() {
                    stream.delta(AnswerSource::Reply, text.push(&c));
                }
                reply.content.push_str(&c);
            }
            Some(Ok(StreamEvent::Reasoning(r))) => reasoning.push_str(&r),
            Some(Ok(StreamEvent::ToolCalls(calls))) => reply.tool_calls.extend(calls),
            Some(Ok(StreamEvent::Continuity(c))) => reply.continuity = Some(c),
            Some(Ok(StreamEvent::Usage(u))) => reply.usage = u,
            Some(Ok(StreamEvent::Done { finish_reason })) => reply.finish_reason = finish_reason,
        }
    }
    if !reasoning.is_empty() {
        reply.reasoning_content = Some(reasoning);
    }
    Ok(reply)
}

impl LoopRun<'_> {
    /// Before a reply is handled: when it calls tools, what it showed is taken back and
    /// becomes the step's `thinking` (a call written as text has no other reasoning).
    pub(super) fn screen_reply(&mut self, mut r: ChatResponse) -> ChatResponse {
        self.replies.finish_reason = r.finish_reason.clone();
        self.replies.continuity = r.continuity.clone();
        self.replies.checklist_before = self.checklist_done;
        let showing = self
            .replies
            .stream
            .as_ref()
            .is_some_and(|s| !s.streamed().is_empty());
        if !showing {
            return r;
        }
        let written = self.mode == Mode::Native
            && r.tool_calls.is_empty()
            && self.calls_in_content(&r.content).is_some();
        if r.tool_calls.is_empty() && !written {
            return r;
        }
        self.replies.held = None;
        if let Some(stream) = &mut self.replies.stream {
            let shown = stream.reset();
            if written && r.reasoning_content.is_none() {
                r.reasoning_content = Some(shown);
            }
        }
        r
    }

    /// After a reply was handled: which answer a final reply leaves, what the checklist holds
    /// back, and what a reply the loop went on from takes back. The safeguard rule holds
    /// whether replies stream or not.
    pub(super) fn settle_reply(&mut self, next: Next) -> Next {
        let answering = self.replies.answering.take();
        match next {
            Next::Final(answer) => Next::Final(self.choose(answer, answering)),
            Next::Continue if !self.replies.checklist_before && self.checklist_done => {
                self.replies.held = self
                    .last_reply_answer()
                    .filter(|text| answering.is_none() || !is_verdict(text))
                    .map(|text| self.candidate(text));
                Next::Continue
            }
            Next::Continue => {
                self.replies.held = None;
                if let Some(stream) = &mut self.replies.stream {
                    stream.reset();
                }
                Next::Continue
            }
            Next::Stop => Next::Stop,
        }
    }

    /// The answer a final reply leaves: the reply itself, unless it answers a safeguard's
    /// prompt with a verdict; then the answer held before the prompt, or one built from the
    /// tool results.
    fn choose(&mut self, answer: String, answering: Option<SafeguardKind>) -> String {
        let held = self.replies.held.take();
        if answering.is_some() && is_verdict(&answer) {
            tracing::info!(
                safeguard = ?answering,
                "the reply to a safeguard's prompt is a verdict, not an answer"
            );
            if let Some(c) = held {
                let text = c.text.clone();
                self.replies.last = Some(c);
                return text;
            }
            self.replies.last = None;
            return observation_answer(&self.steps).unwrap_or(answer);
        }
        let c = self.candidate(answer);
        let text = c.text.clone();
        self.replies.last = Some(c);
        text
    }

    fn candidate(&self, text: String) -> Candidate {
        let problem = if self.mode == Mode::Json && self.last_parse_failed {
            Some("not a JSON action")
        } else {
            problem(&text, self.replies.finish_reason.as_deref())
        };
        Candidate {
            text,
            problem,
            continuity: self.replies.continuity.clone(),
        }
    }

    /// The answer of the last assistant message (JSON mode: its action's `answer`).
    fn last_reply_answer(&self) -> Option<String> {
        let messages = self.messages.shared();
        let m = messages.iter().rev().find(|m| m.role == Role::Assistant)?;
        match self.mode {
            Mode::Native => Some(m.content.clone()),
            Mode::Json => match parse_action(&m.content, &self.json_tools)? {
                Action::FinalAnswer { answer, .. } => Some(answer),
                Action::ToolCall { .. } => None,
            },
        }
    }
}
