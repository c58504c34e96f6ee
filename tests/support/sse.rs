//! A small SSE client: frames parsed from a response body (UTF-8 split across chunks
//! handled), read to the end or until an event matches, and `labels` for comparing streams.

use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

/// One parsed SSE event.
#[derive(Clone, Debug, PartialEq)]
pub struct Sse {
    pub id: u64,
    pub event: String,
    pub data: Value,
}

impl Sse {
    /// `name`, `step:type` or `answer:status`.
    pub fn label(&self) -> String {
        match self.event.as_str() {
            "step" => format!("step:{}", self.data["type"].as_str().unwrap_or("?")),
            "answer" => format!("answer:{}", self.data["status"].as_str().unwrap_or("?")),
            other => other.to_string(),
        }
    }
}

/// Parses complete frames out of `buf`, leaving a partial one; comments are counted.
pub fn parse_frames(buf: &mut String, out: &mut Vec<Sse>, comments: &mut usize) {
    while let Some(end) = buf.find("\n\n") {
        let frame: String = buf.drain(..end + 2).collect();
        let (mut id, mut event, mut data) = (0, String::new(), String::new());
        for line in frame.lines() {
            if let Some(v) = line.strip_prefix("id: ") {
                id = v.parse().unwrap();
            } else if let Some(v) = line.strip_prefix("event: ") {
                event = v.to_string();
            } else if let Some(v) = line.strip_prefix("data: ") {
                data.push_str(v);
            } else if line.starts_with(':') {
                *comments += 1;
            }
        }
        if !event.is_empty() {
            out.push(Sse {
                id,
                event,
                data: serde_json::from_str(&data).unwrap(),
            });
        }
    }
}

/// Appends the text of `chunk` to `buf`. A chunk may end inside a multi-byte UTF-8 character:
/// those bytes wait in `pending` for the next chunk.
pub fn push_utf8(pending: &mut Vec<u8>, buf: &mut String, chunk: &[u8]) {
    pending.extend_from_slice(chunk);
    let valid = match std::str::from_utf8(pending) {
        Ok(text) => text.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(e) => panic!("the SSE body is not UTF-8: {e}"),
    };
    buf.push_str(std::str::from_utf8(&pending[..valid]).unwrap());
    pending.drain(..valid);
}

/// Reads a whole SSE response until it closes.
pub async fn read_all(response: reqwest::Response) -> Vec<Sse> {
    read_until(response, |_| false).await.0
}

/// Reads until `stop` says so (then drops the connection) or the stream ends.
pub async fn read_until(
    response: reqwest::Response,
    mut stop: impl FnMut(&Sse) -> bool,
) -> (Vec<Sse>, usize) {
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream",
        "not an event stream"
    );
    let mut body = response.bytes_stream();
    let (mut buf, mut events, mut comments) = (String::new(), Vec::new(), 0);
    // Bytes not yet decoded: a chunk may end inside a multi-byte UTF-8 character.
    let mut pending: Vec<u8> = Vec::new();
    let read = async {
        while let Some(chunk) = body.next().await {
            push_utf8(&mut pending, &mut buf, &chunk.unwrap());
            let before = events.len();
            parse_frames(&mut buf, &mut events, &mut comments);
            if events[before..].iter().any(&mut stop) {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .expect("SSE stream took too long");
    (events, comments)
}

/// The events' labels, consecutive deltas collapsed into one (their number depends on
/// chunking).
pub fn labels(events: &[Sse]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in events {
        let l = e.label();
        if l == "answer:delta" && out.last().map(String::as_str) == Some("answer:delta") {
            continue;
        }
        out.push(l);
    }
    out
}

/// Ids are 1, 2, 3… from the first event.
pub fn assert_sequential(events: &[Sse]) {
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.id, i as u64 + 1, "ids must be 1, 2, 3…");
    }
}

/// The ids of a log that a crash may have interrupted: 1, 2, 3… up to where the crash was,
/// then (at most one gap: ids a client may have seen but that were never stored) the recovery
/// tail, numbered above the run's reserved ceiling and contiguous again. A run killed before
/// its first write has only the tail.
pub fn assert_ids_rise_with_one_crash_gap(ids: &[u64]) {
    assert!(!ids.is_empty(), "a log has events");
    let from_zero: Vec<u64> = std::iter::once(0).chain(ids.iter().copied()).collect();
    assert!(
        from_zero.windows(2).all(|w| w[1] > w[0]),
        "ids must rise strictly: {ids:?}"
    );
    let gaps = from_zero.windows(2).filter(|w| w[1] != w[0] + 1).count();
    assert!(gaps <= 1, "at most one gap (the crash): {ids:?}");
}

/// No id with two contents: every event in `seen` is in `replay` as it was seen, unless an
/// answer `reset` after it discards it (as after any crash). `run` names the run in failures.
pub fn assert_seen_replayed(run: &str, seen: &[Sse], replay: &[Sse]) {
    let by_id: std::collections::HashMap<u64, &Sse> = replay.iter().map(|e| (e.id, e)).collect();
    let reset = replay
        .iter()
        .filter(|e| e.label() == "answer:reset")
        .map(|e| e.id)
        .max();
    for e in seen {
        match by_id.get(&e.id) {
            Some(r) => assert_eq!(
                (&r.event, &r.data),
                (&e.event, &e.data),
                "run {run}: id {} was seen with other content",
                e.id
            ),
            None => assert!(
                reset.is_some_and(|r| r > e.id),
                "run {run}: seen id {} is not stored and no reset follows it",
                e.id
            ),
        }
    }
}
