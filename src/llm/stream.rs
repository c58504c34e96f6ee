//! Streaming helpers the protocols' decoders share (`providers/*/stream.rs`), free of IO so they
//! can be tested alone.
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

use std::collections::HashMap;

use serde_json::Value;

use super::ToolCall;

/// One `delta.tool_calls[i]` fragment, already decoded from the provider's JSON (every field is
/// optional on the wire).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolCallDelta {
    pub index: Option<u32>,
    pub id: Option<String>,
    pub name: Option<String>,
    pub arguments: Option<String>,
    /// Gemini's `extra_content` (its thought signature), kept for [`Continuity`](super::Continuity).
    pub extra_content: Option<Value>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    extra_content: Option<Value>,
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
        if let Some(extra) = delta.extra_content.filter(|v| !v.is_null()) {
            merge_value(&mut call.extra_content, extra);
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
        self.finish_with_extras().0
    }

    /// [`Self::finish`], with each call's `extra_content` (in the same order; `None` for a call
    /// that had none).
    pub fn finish_with_extras(self) -> (Vec<ToolCall>, Vec<Option<Value>>) {
        let (mut calls, extras): (Vec<ToolCall>, Vec<Option<Value>>) = self
            .calls
            .into_iter()
            .filter(|c| !(c.id.is_empty() && c.name.is_empty() && c.arguments.is_empty()))
            .enumerate()
            .map(|(n, c)| {
                let call = ToolCall {
                    id: if c.id.is_empty() {
                        format!("call_{n}")
                    } else {
                        c.id
                    },
                    name: c.name,
                    arguments: c.arguments,
                };
                (call, c.extra_content)
            })
            .unzip();
        dedupe_call_ids(&mut calls);
        (calls, extras)
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

/// Puts a value that arrived in several deltas together: objects merge key by key (recursively),
/// anything else replaces what came before.
pub(super) fn merge_value(so_far: &mut Option<Value>, more: Value) {
    match (so_far.as_mut(), more) {
        (Some(Value::Object(old)), Value::Object(new)) => {
            for (key, value) in new {
                let mut slot = old.remove(&key);
                merge_value(&mut slot, value);
                if let Some(v) = slot {
                    old.insert(key, v);
                }
            }
        }
        (_, more) => *so_far = Some(more),
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
mod tests;
