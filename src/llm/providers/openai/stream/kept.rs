//! The continuity fields of a streamed reply ([`Continuity`](crate::llm::Continuity)), put
//! back together from their deltas: `reasoning_content` and `reasoning` arrive as text pieces,
//! `reasoning_details` as an array per chunk whose items continue the item of the same `index`
//! (text pieces appended, a signature arriving with a later piece), and `extra_content` whole.

use serde_json::{Map, Value};

use super::Delta;

/// What the deltas of one reply carried, so far.
#[derive(Debug, Default)]
pub(super) struct KeptDeltas {
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    reasoning_details: Vec<Value>,
    extra_content: Option<Value>,
}

/// String fields of a reasoning item that arrive in pieces.
const PIECED: &[&str] = &["text", "summary", "data"];

impl KeptDeltas {
    /// Takes the kept fields out of `delta` and returns its reasoning text to show, if any.
    pub(super) fn feed(&mut self, delta: &mut Delta) -> Option<String> {
        let content = text(delta.reasoning_content.take());
        let reasoning = text(delta.reasoning.take());
        if let Some(piece) = &content {
            self.reasoning_content
                .get_or_insert_default()
                .push_str(piece);
        }
        if let Some(piece) = &reasoning {
            self.reasoning.get_or_insert_default().push_str(piece);
        }
        if let Some(Value::Array(items)) = delta.reasoning_details.take() {
            for item in items {
                self.add_detail(item);
            }
        }
        if let Some(extra) = delta.extra_content.take().filter(|v| !v.is_null()) {
            crate::llm::stream::merge_value(&mut self.extra_content, extra);
        }
        content.or(reasoning).filter(|r| !r.is_empty())
    }

    /// Appends a `reasoning_details` item, or continues the earlier one of the same `index`.
    fn add_detail(&mut self, item: Value) {
        let index = item.get("index").filter(|i| !i.is_null()).cloned();
        let earlier = index.and_then(|index| {
            self.reasoning_details
                .iter_mut()
                .find(|d| d.get("index") == Some(&index))
        });
        let (Some(Value::Object(earlier)), Value::Object(piece)) = (earlier, &item) else {
            self.reasoning_details.push(item);
            return;
        };
        for (key, value) in piece {
            match (earlier.get_mut(key), value) {
                (Some(Value::String(so_far)), Value::String(more)) if PIECED.contains(&&**key) => {
                    so_far.push_str(more);
                }
                (_, Value::Null) => {}
                _ => {
                    earlier.insert(key.clone(), value.clone());
                }
            }
        }
    }

    /// The fields that arrived, under their wire names.
    pub(super) fn into_map(self) -> Map<String, Value> {
        let mut out = Map::new();
        if let Some(r) = self.reasoning_content {
            out.insert("reasoning_content".into(), Value::String(r));
        }
        if let Some(r) = self.reasoning {
            out.insert("reasoning".into(), Value::String(r));
        }
        if !self.reasoning_details.is_empty() {
            out.insert(
                "reasoning_details".into(),
                Value::Array(self.reasoning_details),
            );
        }
        if let Some(extra) = self.extra_content {
            out.insert("extra_content".into(), extra);
        }
        out
    }
}

/// A text piece; any other shape is not reasoning text.
fn text(value: Option<Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s),
        _ => None,
    }
}
