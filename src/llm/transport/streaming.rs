//! The streamed side of a [`Transport`]: one [`StreamState`] per streamed call, which connects (retrying while nothing was handed over), decodes SSE events
//! with bounded memory and enforces the gap and total timeouts described in the parent module.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::Ordering;

use futures::{Stream, StreamExt};
use tokio::time::Instant;

use super::super::providers::Decode;
use super::super::sse::{NotUtf8, SseData};
use super::super::StreamEvent;
use super::*;

/// The response body's chunks (capped at `max_response_bytes`).
type BodyStream = Pin<Box<dyn Stream<Item = Result<bytes::Bytes, reqwest::Error>> + Send>>;

/// One streamed call: the SSE source, the decoder, and the events decoded but not yet handed over.
pub(super) struct StreamState {
    shared: Arc<Transport>,
    body: RequestBody,
    retries: u32,
    sse: Option<BodyStream>,
    /// The SSE events of the body read so far.
    sse_data: SseData,
    decoder: Box<dyn Decode>,
    pending: VecDeque<StreamEvent>,
    /// Set once an event reached the consumer: from then on, no retry (no duplicates).
    handed_over: bool,
    finished: bool,
    /// End of the total budget of the current attempt.
    deadline: Instant,
    /// Set when the current attempt's body went past `max_response_bytes`.
    overflow: Arc<AtomicBool>,
    /// The gap timer, armed lazily (see [`StreamState::read`]).
    gap_timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// Why reading the stream stopped, and whether a fresh attempt could succeed.
struct StepError {
    error: LlmError,
    transient: bool,
}

impl From<LlmError> for StepError {
    fn from(error: LlmError) -> Self {
        let transient = error.is_retryable();
        Self { error, transient }
    }
}

impl StreamState {
    pub(super) fn new(shared: Arc<Transport>, body: RequestBody) -> Self {
        let deadline = Instant::now() + shared.timeout * STREAM_TOTAL_FACTOR;
        let decoder = shared.wire.decoder(&shared.name);
        Self {
            shared,
            body,
            retries: 0,
            sse: None,
            sse_data: SseData::new(),
            decoder,
            pending: VecDeque::new(),
            handed_over: false,
            finished: false,
            deadline,
            overflow: Arc::new(AtomicBool::new(false)),
            gap_timer: None,
        }
    }

    /// Opens the SSE response, retrying retryable failures (`self.retries` counts them all).
    pub(super) async fn connect(&mut self) -> Result<(), LlmError> {
        loop {
            self.deadline = Instant::now() + self.shared.timeout * STREAM_TOTAL_FACTOR;
            let send = self.shared.send(self.body.clone(), true);
            let failure = match tokio::time::timeout(self.shared.timeout, send).await {
                Ok(Ok(response)) => return self.start(response).await,
                Ok(Err(failure)) => failure,
                Err(_) => Failure::from(LlmError::Timeout(ceil_secs(self.shared.timeout))),
            };
            let retryable = failure.error.is_retryable();
            if !self
                .shared
                .wait_before_retry(self.retries, &failure, retryable)
                .await
            {
                return Err(failure.error);
            }
            self.retries += 1;
        }
    }

    /// Starts reading a 2xx response. A server that ignored `stream: true` and answered with
    /// plain JSON is accepted: its reply is turned into the same events.
    async fn start(&mut self, response: reqwest::Response) -> Result<(), LlmError> {
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if !is_json {
            // Count raw bytes before SSE parsing: past the cap the byte stream just ends and
            // `overflow` tells `read` why.
            let overflow = Arc::new(AtomicBool::new(false));
            self.overflow = overflow.clone();
            let cap = self.shared.max_response_bytes;
            let capped = response.bytes_stream().scan(0usize, move |total, item| {
                if let Ok(bytes) = &item {
                    *total += bytes.len();
                    if *total > cap {
                        overflow.store(true, Ordering::Relaxed);
                        return futures::future::ready(None);
                    }
                }
                futures::future::ready(Some(item))
            });
            self.sse = Some(Box::pin(capped));
            self.sse_data = SseData::new();
            return Ok(());
        }
        let bytes = tokio::time::timeout(self.shared.timeout, self.shared.read_body(response))
            .await
            .map_err(|_| LlmError::Timeout(ceil_secs(self.shared.timeout)))?
            .map_err(|f| f.error)?;
        let reply = self.shared.wire.parse(&bytes, &self.shared.name)?;
        self.pending.extend(response_events(reply));
        self.finished = true;
        Ok(())
    }

    pub(super) async fn next_event(&mut self) -> Option<Result<StreamEvent, LlmError>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                if !self.handed_over {
                    self.handed_over = true;
                    // Never sent again (no retry once the consumer has events): release it
                    // rather than hold it for the rest of the stream.
                    self.body = RequestBody::default();
                }
                return Some(Ok(event));
            }
            if self.finished {
                return None;
            }
            let Err(step) = self.read().await else {
                continue;
            };
            let retry = step.transient && !self.handed_over;
            let failure = Failure::from(step.error);
            if !self
                .shared
                .wait_before_retry(self.retries, &failure, retry)
                .await
            {
                self.finished = true;
                self.sse = None;
                return Some(Err(failure.error));
            }
            self.retries += 1;
            self.decoder = self.shared.wire.decoder(&self.shared.name);
            if let Err(error) = self.connect().await {
                self.finished = true;
                return Some(Err(error));
            }
        }
    }

    /// Reads one SSE event into `pending`.
    async fn read(&mut self) -> Result<(), StepError> {
        let Some(sse) = self.sse.as_mut() else {
            self.finished = true;
            return Ok(());
        };
        let total = self.shared.timeout * STREAM_TOTAL_FACTOR;
        // The next event must come by `wait_until`. One timer serves the whole stream and is
        // armed lazily: it stays at an earlier (never later) instant while events flow, and
        // when it fires early it is moved to the current `wait_until`. A `timeout()` per event
        // would insert and remove a timer-wheel entry per token (1,000s per second under load).
        let wait_until = (Instant::now() + self.shared.timeout).min(self.deadline);
        let timer = self
            .gap_timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(wait_until)));
        if timer.deadline() > wait_until {
            timer.as_mut().reset(wait_until);
        }
        let next = loop {
            if let Some(data) = self.sse_data.next_data() {
                break Some(data);
            }
            if self.sse_data.is_finished() {
                break None;
            }
            tokio::select! {
                biased;
                chunk = sse.next() => match chunk {
                    Some(Ok(bytes)) => self.sse_data.push(&bytes),
                    Some(Err(e)) => {
                        // Transient: a fresh attempt may well succeed (retried only if nothing
                        // was handed over yet).
                        let error = transport_error(&e, self.shared.timeout).error;
                        return Err(StepError {
                            error: LlmError::Stream(format!("connection broke: {error}")),
                            transient: true,
                        });
                    }
                    None if self.overflow.load(Ordering::Relaxed) => {
                        return Err(StepError {
                            error: LlmError::Stream(format!(
                                "the stream is larger than {} bytes (LLM_MAX_RESPONSE_BYTES)",
                                self.shared.max_response_bytes
                            )),
                            transient: false,
                        })
                    }
                    None => self.sse_data.finish(),
                },
                () = timer.as_mut() => {
                    if timer.deadline() >= wait_until {
                        if Instant::now() >= self.deadline {
                            return Err(LlmError::Timeout(ceil_secs(total)).into());
                        }
                        return Err(LlmError::Timeout(ceil_secs(self.shared.timeout)).into());
                    }
                    timer.as_mut().reset(wait_until);
                }
            }
        };
        let events = match next {
            Some(Ok(data)) => self.decoder.feed(&data)?,
            Some(Err(NotUtf8)) => {
                return Err(LlmError::Stream("unreadable SSE: data is not UTF-8".into()).into())
            }
            None => self.decoder.end_of_input().map_err(|error| StepError {
                error,
                transient: true,
            })?,
        };
        self.pending.extend(events);
        if self.decoder.is_done() {
            self.finished = true;
            self.sse = None;
        }
        Ok(())
    }
}

/// A complete reply as the events a stream of it would have produced.
fn response_events(reply: ChatResponse) -> Vec<StreamEvent> {
    let mut events = Vec::new();
    if let Some(r) = reply.reasoning_content {
        events.push(StreamEvent::Reasoning(r));
    }
    if !reply.content.is_empty() {
        events.push(StreamEvent::Content(reply.content));
    }
    if !reply.tool_calls.is_empty() {
        events.push(StreamEvent::ToolCalls(reply.tool_calls));
    }
    if let Some(c) = reply.continuity {
        events.push(StreamEvent::Continuity(c));
    }
    events.push(StreamEvent::Usage(reply.usage));
    events.push(StreamEvent::Done {
        finish_reason: reply.finish_reason,
    });
    events
}
