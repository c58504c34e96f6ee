//! Streaming helpers for the OpenAI-compatible client, free of IO so they can be tested alone.
//!
//! [`ToolCallAssembler`] turns the `delta.tool_calls` fragments of a streamed reply into whole
//! [`ToolCall`]s. Providers disagree on how they fragment calls: OpenAI sends an `index` with every
//! fragment and the name whole in the first one, while some compatible servers omit `index`, split
//! the name, or send the arguments in later chunks. The assembler accepts all of these:
//! - a fragment with an `index` goes to the call opened for that index (several calls may be
//!   interleaved), unless it carries a *different* non-empty `id`, which opens a new call (some
//!   servers reuse index 0 for every call);
//! - a fragment without `index` but with an `id` different from the current call's opens a new call;
//! - a fragment without `index` and without `id` is appended to the last call.
//!
//! Names and arguments are concatenated in arrival order; calls come out in order of first
//! appearance. Calls that never got an id receive a deterministic `call_<n>` id so that tool
//! results can still be matched to them.
//!
//! [`StreamDecoder`] reads the `data:` payloads of a `chat.completion.chunk` SSE stream and turns
//! them into [`StreamEvent`]s: content and reasoning deltas as they arrive, then the assembled tool
//! calls, the usage and `Done` once the stream is complete. Its wire types are private and
//! lenient (every field optional, `null` accepted) so harmless deviations never fail a run.

use std::collections::HashMap;

use serde::Deserialize;

use super::{LlmError, StreamEvent, ToolCall, Usage};

/// One `delta.tool_calls[i]` fragment, already decoded from the provider's JSON (every field is
/// optional on the wire).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolCallDelta {
    pub index: Option<u32>,
    pub id: Option<String>,
    pub name: Option<String>,
    pub arguments: Option<String>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Accumulates tool-call fragments into complete calls. See the module docs for the rules.
#[derive(Debug, Default)]
pub struct ToolCallAssembler {
    calls: Vec<PartialCall>,
    /// Wire index → position in `calls` (the latest call opened for that index).
    by_index: HashMap<u32, usize>,
}

impl ToolCallAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// True while no fragment has been pushed.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Adds one fragment.
    pub fn push(&mut self, delta: ToolCallDelta) {
        let id = delta.id.filter(|id| !id.is_empty());
        let slot = self.slot_for(delta.index, id.as_deref());
        let call = &mut self.calls[slot];
        if let Some(id) = id {
            if call.id.is_empty() {
                call.id = id;
            }
        }
        if let Some(name) = delta.name {
            call.name.push_str(&name);
        }
        if let Some(arguments) = delta.arguments {
            call.arguments.push_str(&arguments);
        }
    }

    /// Finds (or opens) the call a fragment belongs to; always returns a valid position.
    fn slot_for(&mut self, index: Option<u32>, id: Option<&str>) -> usize {
        let differs = |call: &PartialCall| match id {
            Some(id) => !call.id.is_empty() && call.id != id,
            None => false,
        };
        match index {
            Some(index) => match self.by_index.get(&index) {
                Some(&slot) if !differs(&self.calls[slot]) => slot,
                _ => {
                    let slot = self.open();
                    self.by_index.insert(index, slot);
                    slot
                }
            },
            None => match self.calls.len().checked_sub(1) {
                Some(last) if !differs(&self.calls[last]) => last,
                _ => self.open(),
            },
        }
    }

    fn open(&mut self) -> usize {
        self.calls.push(PartialCall::default());
        self.calls.len() - 1
    }

    /// The complete calls, in order of first appearance. Fragments that carried nothing (no
    /// id, name or arguments) are dropped; missing ids become `call_<n>`.
    pub fn finish(self) -> Vec<ToolCall> {
        let mut calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .filter(|c| !(c.id.is_empty() && c.name.is_empty() && c.arguments.is_empty()))
            .enumerate()
            .map(|(n, c)| ToolCall {
                id: if c.id.is_empty() {
                    format!("call_{n}")
                } else {
                    c.id
                },
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        dedupe_call_ids(&mut calls);
        calls
    }
}

/// Makes tool-call ids unique: a provider may repeat an id, or a generated `call_<n>` may
/// collide with a real one. Tool results are matched to their call by id, so two calls sharing
/// one would make the next request invalid; a later duplicate becomes `<id>_2`, `<id>_3`…
/// (found by fuzzing the decoder).
pub fn dedupe_call_ids(calls: &mut [ToolCall]) {
    let mut seen = std::collections::HashSet::new();
    for i in 0..calls.len() {
        if seen.contains(&calls[i].id) {
            let base = calls[i].id.clone();
            let taken = |id: &String, seen: &std::collections::HashSet<String>| {
                seen.contains(id) || calls.iter().any(|c| &c.id == id)
            };
            let mut n = 2;
            let mut candidate = format!("{base}_{n}");
            while taken(&candidate, &seen) {
                n += 1;
                candidate = format!("{base}_{n}");
            }
            calls[i].id = candidate;
        }
        seen.insert(calls[i].id.clone());
    }
}

/// Token counts as providers send them: any field may be missing, the object may be empty.
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
}

impl WireUsage {
    /// The usage of one call; `llm_calls` is 1 whatever the provider reported.
    pub fn to_usage(usage: Option<&WireUsage>) -> Usage {
        let (p, c) = usage.map_or((0, 0), |u| {
            (
                u.prompt_tokens.unwrap_or(0),
                u.completion_tokens.unwrap_or(0),
            )
        });
        Usage::call(p, c)
    }
}

/// Tool-call arguments are a JSON string per the spec, but a few servers send an object.
pub(super) fn arguments_text(value: Option<serde_json::Value>) -> Option<String> {
    match value? {
        serde_json::Value::String(s) => Some(s),
        serde_json::Value::Null => None,
        other => Some(other.to_string()),
    }
}

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<ChunkChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    /// Some providers report failures in-band, as a chunk carrying only `error`.
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    /// OpenRouter and a few others name the reasoning delta `reasoning`.
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCallDelta>>,
}

#[derive(Debug, Deserialize)]
struct WireToolCallDelta {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct WireFunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<serde_json::Value>,
}

/// Turns SSE `data` payloads into [`StreamEvent`]s (see the module docs).
#[derive(Debug, Default)]
pub struct StreamDecoder {
    tools: ToolCallAssembler,
    usage: Option<WireUsage>,
    finish_reason: Option<String>,
    done: bool,
}

impl StreamDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// True once the final events were produced (by `[DONE]` or [`Self::end_of_input`]).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Feeds one `data` payload and returns the events it yields, in order. `[DONE]` yields the
    /// final tool calls, usage and `Done`. An unreadable chunk or an in-band error is a
    /// [`LlmError::Stream`].
    pub fn feed(&mut self, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        let data = data.trim();
        if self.done {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            return Ok(self.finish());
        }
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| LlmError::Stream(format!("malformed chunk ({e}): {}", excerpt(data))))?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(LlmError::Stream(format!(
                "provider error in stream: {}",
                excerpt(&error.to_string())
            )));
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        let mut events = Vec::new();
        for choice in chunk.choices.unwrap_or_default() {
            if let Some(delta) = choice.delta {
                let reasoning = delta.reasoning_content.or(delta.reasoning);
                if let Some(r) = reasoning.filter(|r| !r.is_empty()) {
                    events.push(StreamEvent::Reasoning(r));
                }
                if let Some(c) = delta.content.filter(|c| !c.is_empty()) {
                    events.push(StreamEvent::Content(c));
                }
                for call in delta.tool_calls.unwrap_or_default() {
                    let (name, arguments) = match call.function {
                        Some(f) => (f.name, arguments_text(f.arguments)),
                        None => (None, None),
                    };
                    self.tools.push(ToolCallDelta {
                        index: call.index,
                        id: call.id,
                        name,
                        arguments,
                    });
                }
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.finish_reason = Some(reason);
            }
        }
        Ok(events)
    }

    /// The byte stream ended. Without `[DONE]` that is fine only if a `finish_reason` arrived
    /// (the reply is complete); otherwise the stream was cut and the reply is unusable.
    pub fn end_of_input(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        if self.done {
            return Ok(Vec::new());
        }
        if self.finish_reason.is_some() {
            return Ok(self.finish());
        }
        self.done = true;
        Err(LlmError::Stream(
            "stream ended before the reply was complete (no finish_reason, no [DONE])".into(),
        ))
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        self.done = true;
        let mut events = Vec::new();
        let tools = std::mem::take(&mut self.tools).finish();
        if !tools.is_empty() {
            events.push(StreamEvent::ToolCalls(tools));
        }
        events.push(StreamEvent::Usage(WireUsage::to_usage(self.usage.as_ref())));
        events.push(StreamEvent::Done {
            finish_reason: self.finish_reason.take(),
        });
        events
    }
}

/// At most 300 characters of `text` (an ellipsis included), cut on a character boundary, for
/// error messages: enough to diagnose, never a whole HTML error page.
pub(super) fn excerpt(text: &str) -> String {
    const MAX: usize = 300;
    let text = text.trim();
    if text.chars().count() <= MAX {
        return text.to_string();
    }
    let cut = text
        .char_indices()
        .nth(MAX - 1)
        .map_or(text.len(), |(i, _)| i);
    format!("{}…", &text[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_call_ids_are_made_unique() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "f".into(),
            arguments: "{}".into(),
        };
        let mut calls = vec![call("a"), call("a"), call("a_2"), call("b"), call("a")];
        dedupe_call_ids(&mut calls);
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "a_3", "a_2", "b", "a_4"]);
    }

    fn d(
        index: Option<u32>,
        id: Option<&str>,
        name: Option<&str>,
        args: Option<&str>,
    ) -> ToolCallDelta {
        ToolCallDelta {
            index,
            id: id.map(str::to_string),
            name: name.map(str::to_string),
            arguments: args.map(str::to_string),
        }
    }

    fn call(id: &str, name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn openai_style_single_call_with_arguments_in_later_chunks() {
        let mut a = ToolCallAssembler::new();
        a.push(d(Some(0), Some("call_a"), Some("calculator"), Some("")));
        a.push(d(Some(0), None, None, Some("{\"expr")));
        a.push(d(Some(0), None, None, Some("ession\":")));
        a.push(d(Some(0), None, None, Some("\"1+1\"}")));
        assert_eq!(
            a.finish(),
            vec![call("call_a", "calculator", "{\"expression\":\"1+1\"}")]
        );
    }

    #[test]
    fn parallel_calls_interleaved_by_index() {
        let mut a = ToolCallAssembler::new();
        a.push(d(Some(0), Some("c0"), Some("alpha"), None));
        a.push(d(Some(1), Some("c1"), Some("beta"), None));
        a.push(d(Some(1), None, None, Some("{\"b\":")));
        a.push(d(Some(0), None, None, Some("{\"a\":1}")));
        a.push(d(Some(1), None, None, Some("2}")));
        assert_eq!(
            a.finish(),
            vec![
                call("c0", "alpha", "{\"a\":1}"),
                call("c1", "beta", "{\"b\":2}")
            ]
        );
    }

    #[test]
    fn missing_index_new_id_opens_new_call_and_no_id_appends_to_last() {
        let mut a = ToolCallAssembler::new();
        a.push(d(None, Some("x"), Some("first"), Some("{")));
        a.push(d(None, None, None, Some("}")));
        a.push(d(None, Some("y"), Some("second"), None));
        a.push(d(None, Some("y"), None, Some("{\"k\":")));
        a.push(d(None, None, None, Some("true}")));
        assert_eq!(
            a.finish(),
            vec![
                call("x", "first", "{}"),
                call("y", "second", "{\"k\":true}")
            ]
        );
    }

    #[test]
    fn name_split_over_chunks_is_concatenated() {
        let mut a = ToolCallAssembler::new();
        a.push(d(Some(0), Some("id"), Some("current_"), None));
        a.push(d(Some(0), None, Some("time"), None));
        a.push(d(Some(0), None, None, Some("{}")));
        assert_eq!(a.finish(), vec![call("id", "current_time", "{}")]);
    }

    #[test]
    fn reused_index_with_a_different_id_is_a_new_call() {
        let mut a = ToolCallAssembler::new();
        a.push(d(Some(0), Some("a"), Some("one"), Some("{}")));
        a.push(d(Some(0), Some("b"), Some("two"), Some("{")));
        a.push(d(Some(0), None, None, Some("}")));
        assert_eq!(
            a.finish(),
            vec![call("a", "one", "{}"), call("b", "two", "{}")]
        );
    }

    #[test]
    fn missing_ids_get_deterministic_ids_and_empty_fragments_are_dropped() {
        let mut a = ToolCallAssembler::new();
        assert!(a.is_empty());
        a.push(d(Some(3), None, Some("f"), Some("{}")));
        a.push(d(Some(4), None, None, None));
        a.push(d(Some(5), Some(""), Some("g"), None));
        assert!(!a.is_empty());
        assert_eq!(
            a.finish(),
            vec![call("call_0", "f", "{}"), call("call_1", "g", "")]
        );
    }

    #[test]
    fn fragment_without_index_or_id_first_opens_a_call() {
        let mut a = ToolCallAssembler::new();
        a.push(d(None, None, Some("lonely"), Some("{}")));
        assert_eq!(a.finish(), vec![call("call_0", "lonely", "{}")]);
    }

    fn feed_all(dec: &mut StreamDecoder, chunks: &[&str]) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        for c in chunks {
            out.extend(dec.feed(c).unwrap_or_else(|e| panic!("chunk {c}: {e}")));
        }
        out
    }

    #[test]
    fn decoder_yields_deltas_then_tools_usage_done_on_done_marker() {
        let mut dec = StreamDecoder::new();
        let events = feed_all(
            &mut dec,
            &[
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
                r#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#,
                r#"{"choices":[{"delta":{"content":"Hi"},"finish_reason":null}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]}}]}"#,
                r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
                r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}"#,
            ],
        );
        assert_eq!(
            events,
            vec![
                StreamEvent::Reasoning("think".into()),
                StreamEvent::Content("Hi".into())
            ]
        );
        assert!(!dec.is_done());
        let end = dec.feed("[DONE]").unwrap_or_default();
        assert_eq!(
            end,
            vec![
                StreamEvent::ToolCalls(vec![call("c", "f", "{}")]),
                StreamEvent::Usage(Usage::call(7, 3)),
                StreamEvent::Done {
                    finish_reason: Some("tool_calls".into())
                },
            ]
        );
        assert!(dec.is_done());
        assert_eq!(
            dec.feed(r#"{"choices":[{"delta":{"content":"late"}}]}"#),
            Ok(vec![])
        );
    }

    #[test]
    fn decoder_tolerates_null_and_empty_usage_and_choices() {
        let mut dec = StreamDecoder::new();
        let events = feed_all(
            &mut dec,
            &[
                r#"{"choices":null,"usage":null}"#,
                r#"{"choices":[{"delta":null}],"usage":{}}"#,
                r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}"#,
            ],
        );
        assert_eq!(events, vec![StreamEvent::Content("x".into())]);
        let end = dec.end_of_input().unwrap_or_default();
        assert_eq!(
            end,
            vec![
                StreamEvent::Usage(Usage::call(0, 0)),
                StreamEvent::Done {
                    finish_reason: Some("stop".into())
                },
            ]
        );
    }

    #[test]
    fn decoder_reports_a_cut_stream_and_malformed_chunks() {
        let mut dec = StreamDecoder::new();
        let _ = feed_all(&mut dec, &[r#"{"choices":[{"delta":{"content":"par"}}]}"#]);
        assert!(matches!(dec.end_of_input(), Err(LlmError::Stream(_))));

        let mut dec = StreamDecoder::new();
        assert!(matches!(
            dec.feed("{\"choices\": [tru"),
            Err(LlmError::Stream(_))
        ));
        let err = dec.feed(r#"{"error":{"message":"overloaded"}}"#);
        assert!(matches!(err, Err(LlmError::Stream(m)) if m.contains("overloaded")));
    }

    #[test]
    fn decoder_accepts_reasoning_alias_and_object_arguments() {
        let mut dec = StreamDecoder::new();
        let events = feed_all(
            &mut dec,
            &[
                r#"{"choices":[{"delta":{"reasoning":"r"}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"id":"k","function":{"name":"g","arguments":{"a":1}}}]},"finish_reason":"tool_calls"}]}"#,
                "[DONE]",
            ],
        );
        assert_eq!(events[0], StreamEvent::Reasoning("r".into()));
        assert_eq!(
            events[1],
            StreamEvent::ToolCalls(vec![call("k", "g", "{\"a\":1}")])
        );
    }

    #[test]
    fn excerpt_is_bounded_and_char_safe() {
        let long = "é".repeat(1000);
        let e = excerpt(&long);
        assert_eq!(e.chars().count(), 300);
        assert!(e.ends_with('…'));
        assert_eq!(excerpt("  short  "), "short");
    }
}
