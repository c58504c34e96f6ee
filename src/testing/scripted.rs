//! [`ScriptedLlm`]: an [`Llm`] that replays scripted turns and records every request, for
//! engine tests. `chat` and `stream_chat` each pop from their own script; an exhausted `chat`
//! script is an error (so a test that under-scripts fails loudly), an exhausted `stream_chat`
//! script streams a default answer.
//!
//! Its synthesis policy is `always` unless set ([`ScriptedLlm::with_synthesis`]): the engine's
//! loop then calls `chat` and only the synthesis streams. Under `auto` and `never` the loop
//! streams too: its turns come from the `stream_chat` script, a [`Turn::Reply`] streamed whole
//! (reasoning, content, tool calls, finish reason), or, once that script is empty, from the
//! `chat` script, so that a test of the loop alone scripts its turns the same way whatever the
//! policy.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::{stream, StreamExt};

use crate::llm::registry::{ModelInfo, ModelRegistry};
use crate::llm::{
    Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError, StreamEvent, SynthesisPolicy,
    ToolCall, Usage,
};

/// One scripted reply.
#[derive(Clone, Debug)]
pub enum Turn {
    /// Reply with this response after an optional delay.
    Reply(ChatResponse, Duration),
    /// Fail with this error.
    Fail(LlmError),
    /// Streamed reply: these content deltas, then optionally an error instead of the end.
    Stream(Vec<String>, Option<LlmError>),
    /// A slow stream: each content delta after this wait; `then` ends it (`None`: it ends
    /// normally; `Some(e)`: with that error). A wait of hours stands for a stream that stalls.
    Paced {
        chunks: Vec<String>,
        every: Duration,
        then: Option<LlmError>,
    },
}

/// Which method a recorded request came through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    Chat,
    Stream,
}

struct Script {
    chat: VecDeque<Turn>,
    stream: VecDeque<Turn>,
    requests: Vec<(CallKind, ChatRequest)>,
    /// False for benchmarks: a kept request would make the engine copy its history on the
    /// next append (copy-on-write), which production clients never cause.
    record: bool,
}

pub struct ScriptedLlm {
    model: String,
    abilities: Abilities,
    context_window: u32,
    max_output_tokens: u32,
    synthesis: SynthesisPolicy,
    script: Mutex<Script>,
}

/// Tokens a scripted reply reports: 10 prompt + 5 completion per call, so sums are easy to check.
pub const SCRIPTED_PROMPT_TOKENS: u64 = 10;
pub const SCRIPTED_COMPLETION_TOKENS: u64 = 5;

impl ScriptedLlm {
    pub fn new(abilities: Abilities) -> Self {
        Self {
            model: "scripted".into(),
            abilities,
            context_window: 128_000,
            max_output_tokens: 4_096,
            synthesis: SynthesisPolicy::Always,
            script: Mutex::new(Script {
                chat: VecDeque::new(),
                stream: VecDeque::new(),
                requests: Vec::new(),
                record: true,
            }),
        }
    }

    /// Keeps no requests ([`Self::requests`] stays empty), as a real client keeps none.
    pub fn without_recording(self) -> Self {
        self.lock().record = false;
        self
    }

    /// Native function calling and JSON mode.
    pub fn native() -> Self {
        Self::new(Abilities::default())
    }

    /// No function calling (JSON mode loop), with `response_format` support.
    pub fn json() -> Self {
        Self::new(Abilities {
            tool_call: false,
            json_mode: true,
            tool_choice: false,
            vision: false,
            json_schema: false,
        })
    }

    /// JSON mode whose requests carry the action's schema (`abilities.json_schema`).
    pub fn json_schema() -> Self {
        let s = Self::json();
        Self {
            abilities: Abilities {
                json_schema: true,
                ..s.abilities
            },
            ..s
        }
    }

    pub fn with_context(mut self, window: u32, max_output: u32) -> Self {
        self.context_window = window;
        self.max_output_tokens = max_output;
        self
    }

    /// A model configured with `synthesis = "never"` (the old `false`).
    pub fn without_synthesis(self) -> Self {
        self.with_synthesis(SynthesisPolicy::Never)
    }

    /// A model configured with this `synthesis` policy.
    pub fn with_synthesis(mut self, policy: SynthesisPolicy) -> Self {
        self.synthesis = policy;
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends a `chat` turn.
    pub fn push(&self, turn: Turn) -> &Self {
        self.lock().chat.push_back(turn);
        self
    }

    /// Appends a plain-text `chat` reply.
    pub fn text(&self, content: &str) -> &Self {
        self.push(Turn::Reply(response(content, vec![]), Duration::ZERO))
    }

    /// Appends a `chat` reply with native tool calls `(id, name, arguments JSON)`.
    pub fn tool_calls(&self, calls: &[(&str, &str, &str)]) -> &Self {
        let calls = calls
            .iter()
            .map(|(id, name, args)| ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: args.to_string(),
            })
            .collect();
        self.push(Turn::Reply(response("", calls), Duration::ZERO))
    }

    /// Appends a `stream_chat` turn.
    pub fn push_stream(&self, turn: Turn) -> &Self {
        self.lock().stream.push_back(turn);
        self
    }

    /// Appends a plain-text `stream_chat` reply, streamed in these pieces.
    pub fn stream_text(&self, pieces: &[&str]) -> &Self {
        let chunks = pieces.iter().map(|p| p.to_string()).collect();
        self.push_stream(Turn::Stream(chunks, None))
    }

    /// Appends a streamed reply with native tool calls `(id, name, arguments JSON)` after
    /// `text` (may be empty).
    pub fn stream_tool_calls(&self, text: &str, calls: &[(&str, &str, &str)]) -> &Self {
        let calls = calls
            .iter()
            .map(|(id, name, args)| ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: args.to_string(),
            })
            .collect();
        self.push_stream(Turn::Reply(response(text, calls), Duration::ZERO))
    }

    /// Every request seen so far, in order.
    pub fn requests(&self) -> Vec<(CallKind, ChatRequest)> {
        self.lock().requests.clone()
    }

    /// Only the `chat` requests.
    pub fn chat_requests(&self) -> Vec<ChatRequest> {
        self.requests()
            .into_iter()
            .filter(|(k, _)| *k == CallKind::Chat)
            .map(|(_, r)| r)
            .collect()
    }

    pub fn stream_requests(&self) -> Vec<ChatRequest> {
        self.requests()
            .into_iter()
            .filter(|(k, _)| *k == CallKind::Stream)
            .map(|(_, r)| r)
            .collect()
    }

    /// `chat` turns not consumed yet.
    pub fn remaining(&self) -> usize {
        self.lock().chat.len()
    }

    /// `stream_chat` turns not consumed yet.
    pub fn remaining_streams(&self) -> usize {
        self.lock().stream.len()
    }
}

/// A registry of one default model, `default`, served by `llm`: what run-manager tests need.
pub fn single_model(llm: Arc<dyn Llm>) -> ModelRegistry {
    let info = ModelInfo {
        name: "default".into(),
        model: "scripted".into(),
        abilities: Abilities::default(),
        context_window: 128_000,
        max_output_tokens: 4096,
        hints: vec![],
        roles: vec![],
        default: true,
        needs_key: false,
        demo: false,
    };
    ModelRegistry::single(info, llm)
}

/// A response with the scripted usage.
pub fn response(content: &str, tool_calls: Vec<ToolCall>) -> ChatResponse {
    ChatResponse {
        content: content.to_string(),
        tool_calls,
        reasoning_content: None,
        continuity: None,
        finish_reason: Some("stop".into()),
        usage: Usage::call(SCRIPTED_PROMPT_TOKENS, SCRIPTED_COMPLETION_TOKENS),
    }
}

#[async_trait]
impl Llm for ScriptedLlm {
    fn model(&self) -> &str {
        &self.model
    }
    fn abilities(&self) -> Abilities {
        self.abilities
    }
    fn context_window(&self) -> u32 {
        self.context_window
    }
    fn max_output_tokens(&self) -> u32 {
        self.max_output_tokens
    }
    fn synthesis(&self) -> SynthesisPolicy {
        self.synthesis
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let turn = {
            let mut s = self.lock();
            if s.record {
                s.requests.push((CallKind::Chat, request));
            }
            s.chat.pop_front()
        };
        match turn {
            Some(Turn::Reply(r, delay)) => {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                Ok(r)
            }
            Some(Turn::Fail(e)) => Err(e),
            Some(Turn::Stream(chunks, _) | Turn::Paced { chunks, .. }) => {
                Ok(response(&chunks.concat(), vec![]))
            }
            None => Err(LlmError::InvalidResponse(
                "scripted LLM: chat script exhausted".into(),
            )),
        }
    }

    async fn stream_chat(&self, request: ChatRequest) -> Result<ChatStream, LlmError> {
        let streams_replies = self.synthesis.streams_replies();
        let turn = {
            let mut s = self.lock();
            if s.record {
                s.requests.push((CallKind::Stream, request));
            }
            match s.stream.pop_front() {
                None if streams_replies => s.chat.pop_front(),
                turn => turn,
            }
        };
        let (chunks, tail) = match turn {
            Some(Turn::Stream(chunks, tail)) => (chunks, tail),
            Some(Turn::Reply(r, delay)) => {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                return Ok(Box::pin(stream::iter(reply_events(r))));
            }
            Some(Turn::Paced {
                chunks,
                every,
                then,
            }) => return Ok(paced(chunks, every, then)),
            Some(Turn::Fail(e)) => return Err(e),
            None => (vec!["Scripted ".into(), "answer.".into()], None),
        };
        let mut items: Vec<Result<StreamEvent, LlmError>> = chunks
            .into_iter()
            .map(|c| Ok(StreamEvent::Content(c)))
            .collect();
        items.extend(stream_end(tail));
        Ok(Box::pin(stream::iter(items)))
    }
}

/// The last events of a scripted stream: `tail`'s error, or the usage and `Done`.
fn stream_end(tail: Option<LlmError>) -> Vec<Result<StreamEvent, LlmError>> {
    match tail {
        Some(e) => vec![Err(e)],
        None => vec![
            Ok(StreamEvent::Usage(Usage::call(
                SCRIPTED_PROMPT_TOKENS,
                SCRIPTED_COMPLETION_TOKENS,
            ))),
            Ok(StreamEvent::Done {
                finish_reason: Some("stop".into()),
            }),
        ],
    }
}

/// A whole reply as a provider streams it: reasoning, content, tool calls, usage, `Done`.
fn reply_events(r: ChatResponse) -> Vec<Result<StreamEvent, LlmError>> {
    let mut items = Vec::new();
    if let Some(reasoning) = r.reasoning_content.filter(|s| !s.is_empty()) {
        items.push(Ok(StreamEvent::Reasoning(reasoning)));
    }
    if !r.content.is_empty() {
        items.push(Ok(StreamEvent::Content(r.content)));
    }
    if !r.tool_calls.is_empty() {
        items.push(Ok(StreamEvent::ToolCalls(r.tool_calls)));
    }
    if let Some(c) = r.continuity {
        items.push(Ok(StreamEvent::Continuity(c)));
    }
    items.push(Ok(StreamEvent::Usage(r.usage)));
    items.push(Ok(StreamEvent::Done {
        finish_reason: r.finish_reason,
    }));
    items
}

/// Content deltas, each after `every`, then [`stream_end`].
fn paced(chunks: Vec<String>, every: Duration, then: Option<LlmError>) -> ChatStream {
    let deltas = stream::iter(chunks).then(move |c| async move {
        tokio::time::sleep(every).await;
        Ok(StreamEvent::Content(c))
    });
    Box::pin(deltas.chain(stream::iter(stream_end(then))))
}
