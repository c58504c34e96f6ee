//! What reagent lets through of a stdio server's output, one line (one JSON-RPC message) at a
//! time, before rmcp decodes it. rmcp drops a line it cannot decode (too long, not UTF-8, not
//! JSON, nested past serde_json's recursion limit), so the request it answered waited for its
//! whole timeout and a `tools/list` one bad tool spoiled failed the whole server. Here:
//! - a line rmcp can decode goes through untouched;
//! - an answer nested deeper than [`MAX_DEPTH`] has its deeper parts replaced by
//!   [`TOO_DEEP`]: in a `tools/list` answer the tools so marked are skipped by name with the
//!   reason, the others served; any other such answer becomes an error;
//! - an answer that cannot be read (too large, not UTF-8, not JSON) becomes a JSON-RPC error
//!   for its request id, found by [`IdScanner`] without holding the line, so the call fails
//!   at once with the real cause and the session goes on.

use serde::de::IgnoredAny;
use serde_json::{json, Value};

/// Largest message read from a stdio server (rmcp's own default, and its HTTP limit).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Deepest nesting kept (serde_json refuses past 128).
pub const MAX_DEPTH: usize = 100;

/// What replaces a part nested deeper than [`MAX_DEPTH`]; the control character keeps it from
/// matching anything a server would send.
pub const TOO_DEEP: &str = "\u{1}reagent: nested too deep";

/// Marks the errors reagent makes up for answers it could not read (`error.data.reagent`).
pub const UNREADABLE: &str = "unreadable answer";

/// What to hand rmcp for one line of the server's output.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// The line as it came.
    Pass,
    /// This line instead (a pruned answer, or an error for the request).
    Replace(Vec<u8>),
    /// Nothing: unreadable and not an answer to a request of ours (logged).
    Drop(String),
}

/// Checks one complete line (without its newline).
pub fn inspect(line: &[u8]) -> Verdict {
    if std::str::from_utf8(line).is_err() {
        return unreadable(line, "is not valid UTF-8");
    }
    // serde_json skips ignored values without its recursion limit: depth is checked apart.
    match serde_json::from_slice::<IgnoredAny>(line) {
        Ok(_) if deeper_than(line, MAX_DEPTH) => too_deep(line),
        Ok(_) => Verdict::Pass,
        Err(_) => unreadable(line, "is not valid JSON"),
    }
}

/// Whether arrays and objects nest more than `limit` levels (a scan that stops early).
fn deeper_than(line: &[u8], limit: usize) -> bool {
    let mut depth = 0usize;
    let (mut in_string, mut escaped) = (false, false);
    for &b in line {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// The verdict on a line over [`MAX_MESSAGE_BYTES`], scanned as it was dropped.
pub fn too_large(scanner: &IdScanner) -> Verdict {
    let why = format!("is larger than {} MiB", MAX_MESSAGE_BYTES / (1024 * 1024));
    answer_error(scanner.answer_id(), &why)
}

fn unreadable(line: &[u8], why: &str) -> Verdict {
    let mut scanner = IdScanner::default();
    scanner.feed(line);
    answer_error(scanner.answer_id(), why)
}

fn answer_error(id: Option<Value>, why: &str) -> Verdict {
    let message = format!("reagent could not read the MCP server's answer: it {why}");
    let Some(id) = id else {
        return Verdict::Drop(format!("a message from the MCP server {why}"));
    };
    let error = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32603, "message": message, "data": {"reagent": UNREADABLE}},
    });
    Verdict::Replace(error.to_string().into_bytes())
}

/// A `tools/list` answer keeps its tools with the too-deep parts marked; any other answer
/// becomes an error.
fn too_deep(line: &[u8]) -> Verdict {
    // Each cut part becomes the marker, which may be longer: bounded like any line.
    let Some(pruned) = prune(line, MAX_DEPTH, MAX_MESSAGE_BYTES) else {
        return unreadable(
            line,
            "is larger than 16 MiB once its too-deep parts are cut",
        );
    };
    let Ok(value) = serde_json::from_slice::<Value>(&pruned) else {
        return unreadable(line, "is not valid JSON");
    };
    if value.pointer("/result/tools").is_some_and(Value::is_array) {
        return Verdict::Replace(pruned);
    }
    let why = format!("nests deeper than {MAX_DEPTH} levels");
    match value.get("method") {
        None => answer_error(value.get("id").cloned(), &why),
        Some(_) => Verdict::Drop(format!("a message from the MCP server {why}")),
    }
}

/// Whether `value` holds a part [`prune`] replaced.
pub fn has_too_deep(value: &Value) -> bool {
    match value {
        Value::String(s) => s == TOO_DEEP,
        Value::Array(items) => items.iter().any(has_too_deep),
        Value::Object(map) => map.values().any(has_too_deep),
        _ => false,
    }
}

/// `line` with every array or object that would open past `limit` levels replaced by the
/// string [`TOO_DEEP`], or `None` past `max` bytes. A byte scan, no recursion: the input may
/// nest a million levels.
pub fn prune(line: &[u8], limit: usize, max: usize) -> Option<Vec<u8>> {
    let marker = serde_json::to_vec(TOO_DEEP).unwrap_or_default();
    let mut out = Vec::with_capacity(line.len());
    let (mut depth, mut skip_to) = (0usize, None::<usize>);
    let (mut in_string, mut escaped) = (false, false);
    for &b in line {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => {
                    if depth == limit && skip_to.is_none() {
                        skip_to = Some(limit);
                        out.extend_from_slice(&marker);
                    }
                    depth += 1;
                }
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    if skip_to == Some(depth) {
                        skip_to = None;
                        continue;
                    }
                }
                _ => {}
            }
        }
        if skip_to.is_none() {
            out.push(b);
        }
        if out.len() > max {
            return None;
        }
    }
    Some(out)
}

/// Finds the top-level `id` of a JSON-RPC message fed to it in pieces, holding only a few
/// bytes: enough to answer a request whose reply was too large to keep.
#[derive(Debug, Default)]
pub struct IdScanner {
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// At depth 1: a key is expected next (after `{` or `,`), else a value (after `:`).
    after_colon: bool,
    key: Vec<u8>,
    reading_key: bool,
    last_key: Vec<u8>,
    id: Vec<u8>,
    capturing_id: bool,
    has_method: bool,
}

/// Longest key or id kept.
const MAX_TOKEN: usize = 256;

impl IdScanner {
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        let top = self.depth == 1;
        let in_id = self.in_string || !matches!(b, b',' | b'}');
        if self.capturing_id && in_id && self.id.len() < MAX_TOKEN {
            self.id.push(b);
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.reading_key {
                    self.reading_key = false;
                    self.last_key = std::mem::take(&mut self.key);
                    self.has_method |= self.last_key == b"method";
                }
            } else if self.reading_key && self.key.len() < MAX_TOKEN {
                self.key.push(b);
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                self.reading_key = top && !self.after_colon;
            }
            b':' if top => {
                self.after_colon = true;
                self.capturing_id = self.last_key == b"id";
            }
            b',' if top => {
                self.after_colon = false;
                self.capturing_id = false;
            }
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    self.capturing_id = false;
                }
            }
            _ => {}
        }
    }

    /// The id of an answer (a message with an id and no `method`), when one was seen whole.
    pub fn answer_id(&self) -> Option<Value> {
        if self.has_method {
            return None;
        }
        let text = std::str::from_utf8(&self.id).ok()?.trim();
        match serde_json::from_str::<Value>(text).ok()? {
            id @ (Value::Number(_) | Value::String(_)) => Some(id),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
