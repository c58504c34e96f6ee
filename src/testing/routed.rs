//! [`RoutedLlm`]: an [`Llm`] whose replies a function picks from each request, for engines
//! that call models concurrently (DAG steps), where a scripted queue would be answered in
//! whatever order the calls arrive. Every call is recorded with its start and end on a
//! logical clock shared by all the models of a test, so tests assert order and overlap from
//! the record instead of from wall time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::future::BoxFuture;
use futures::stream;

use super::scripted::{CallKind, SCRIPTED_COMPLETION_TOKENS, SCRIPTED_PROMPT_TOKENS};
use crate::llm::{
    Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError, StreamEvent, Usage,
};

/// Picks a `chat` reply (it may wait: on a barrier, a gate, forever).
pub type ChatFn =
    Arc<dyn Fn(&ChatRequest) -> BoxFuture<'static, Result<ChatResponse, LlmError>> + Send + Sync>;
/// Picks the deltas of a `stream_chat` reply, or its error.
pub type StreamFn = Arc<dyn Fn(&ChatRequest) -> Result<Vec<String>, LlmError> + Send + Sync>;

/// One call as it happened.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The model's name.
    pub model: String,
    pub kind: CallKind,
    pub request: ChatRequest,
    /// Logical times: every start and end of every model of the clock gets the next tick.
    pub start: u64,
    pub end: u64,
    pub ok: bool,
}

/// The record shared by the models of one test.
#[derive(Clone, Default)]
pub struct Calls {
    clock: Arc<AtomicU64>,
    log: Arc<Mutex<Vec<Recorded>>>,
}

impl Calls {
    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Every finished call, in the order they ended.
    pub fn all(&self) -> Vec<Recorded> {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn push(&self, r: Recorded) {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).push(r);
    }
}

pub struct RoutedLlm {
    name: String,
    abilities: Abilities,
    chat: ChatFn,
    stream: StreamFn,
    calls: Calls,
}

impl RoutedLlm {
    /// Native tool calls and JSON mode; streams "Final answer." unless told otherwise.
    pub fn new(name: &str, calls: &Calls, chat: ChatFn) -> Self {
        Self {
            name: name.to_string(),
            abilities: Abilities::default(),
            chat,
            stream: Arc::new(|_| Ok(vec!["Final ".into(), "answer.".into()])),
            calls: calls.clone(),
        }
    }

    pub fn with_stream(mut self, stream: StreamFn) -> Self {
        self.stream = stream;
        self
    }
}

#[async_trait]
impl Llm for RoutedLlm {
    fn model(&self) -> &str {
        &self.name
    }
    fn abilities(&self) -> Abilities {
        self.abilities
    }
    fn context_window(&self) -> u32 {
        128_000
    }
    fn max_output_tokens(&self) -> u32 {
        4_096
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let start = self.calls.tick();
        let reply = (self.chat)(&request).await;
        self.calls.push(Recorded {
            model: self.name.clone(),
            kind: CallKind::Chat,
            request,
            start,
            end: self.calls.tick(),
            ok: reply.is_ok(),
        });
        reply
    }

    async fn stream_chat(&self, request: ChatRequest) -> Result<ChatStream, LlmError> {
        let start = self.calls.tick();
        let reply = (self.stream)(&request);
        self.calls.push(Recorded {
            model: self.name.clone(),
            kind: CallKind::Stream,
            request,
            start,
            end: self.calls.tick(),
            ok: reply.is_ok(),
        });
        let mut items: Vec<Result<StreamEvent, LlmError>> = reply?
            .into_iter()
            .map(|c| Ok(StreamEvent::Content(c)))
            .collect();
        items.push(Ok(StreamEvent::Usage(Usage::call(
            SCRIPTED_PROMPT_TOKENS,
            SCRIPTED_COMPLETION_TOKENS,
        ))));
        items.push(Ok(StreamEvent::Done {
            finish_reason: Some("stop".into()),
        }));
        Ok(Box::pin(stream::iter(items)))
    }
}
