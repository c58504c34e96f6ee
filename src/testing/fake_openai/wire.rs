//! What a [`FakeReply`] becomes on the wire: a JSON completion, an error, or an SSE stream of
//! `chat.completion.chunk`s with the reply's faults (cut, malformed, endless).

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, Stream, StreamExt};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::{FakeReply, Fault};

pub(super) fn json_body(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

pub(super) fn error_response(
    code: u16,
    retry_after: Option<String>,
    body: Option<String>,
) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = body.unwrap_or_else(|| {
        json!({"error": {"message": format!("fake error {code}"), "type": "fake_error", "code": null}})
            .to_string()
    });
    let mut response = json_body(status, body);
    if let Some(value) = retry_after.and_then(|v| header::HeaderValue::from_str(&v).ok()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

fn finish_reason(reply: &FakeReply) -> String {
    reply.finish_reason.clone().unwrap_or_else(|| {
        if reply.tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        }
        .to_string()
    })
}

fn usage_json(reply: &FakeReply) -> Option<Value> {
    if let Some(raw) = &reply.raw_usage {
        return Some(raw.clone());
    }
    reply.usage.map(|(p, c)| {
        json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": p.saturating_add(c)})
    })
}

/// A non-streamed `chat.completion`.
pub(super) fn completion(reply: &FakeReply, model: &str) -> Value {
    let mut message = json!({
        "role": "assistant",
        "content": if reply.text.is_empty() && !reply.tool_calls.is_empty() {
            Value::Null
        } else {
            json!(reply.text)
        },
    });
    if !reply.tool_calls.is_empty() {
        message["tool_calls"] = reply
            .tool_calls
            .iter()
            .enumerate()
            .map(|(n, (id, name, args))| {
                let mut call = json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}});
                if let Some(extra) = reply.call_extras.get(n).cloned().flatten() {
                    call["extra_content"] = extra;
                }
                call
            })
            .collect();
    }
    if let Some(r) = &reply.reasoning {
        message["reasoning_content"] = json!(r);
    }
    let mut out = json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(reply)}],
    });
    if let Some(usage) = usage_json(reply) {
        out["usage"] = usage;
    }
    out
}

/// Splits `text` into pieces of `n` characters (never empty pieces).
fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

/// The `data` payloads of a complete stream, `[DONE]` excluded.
fn chunks(reply: &FakeReply, model: &str, include_usage: bool) -> Vec<String> {
    let chunk = |delta: Value, finish: Option<String>| {
        json!({
            "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
        .to_string()
    };
    let mut out = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    if let Some(r) = &reply.reasoning {
        for p in pieces(r, reply.chunk_chars) {
            out.push(chunk(json!({"reasoning_content": p}), None));
        }
    }
    for p in pieces(&reply.text, reply.chunk_chars) {
        out.push(chunk(json!({"content": p}), None));
    }
    for (index, (id, name, args)) in reply.tool_calls.iter().enumerate() {
        let call = |mut fields: Value| {
            if !reply.no_index {
                fields["index"] = json!(index);
            }
            chunk(json!({"tool_calls": [fields]}), None)
        };
        let split = name
            .char_indices()
            .nth(name.chars().count() / 2)
            .map_or(0, |(i, _)| i);
        let (head, tail) = name.split_at(split);
        let mut first = json!({
            "id": id, "type": "function", "function": {"name": head, "arguments": ""},
        });
        if let Some(extra) = reply.call_extras.get(index).cloned().flatten() {
            first["extra_content"] = extra;
        }
        out.push(call(first));
        if !tail.is_empty() {
            out.push(call(json!({"function": {"name": tail}})));
        }
        for p in pieces(args, reply.chunk_chars) {
            out.push(call(json!({"function": {"arguments": p}})));
        }
    }
    out.push(chunk(json!({}), Some(finish_reason(reply))));
    if include_usage {
        if let Some(usage) = usage_json(reply) {
            out.push(
                json!({
                    "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                    "model": model, "choices": [], "usage": usage,
                })
                .to_string(),
            );
        }
    }
    out
}

fn frame(data: &str) -> Result<Bytes, std::convert::Infallible> {
    Ok(Bytes::from(format!("data: {data}\n\n")))
}

pub(super) fn sse_response(
    reply: &FakeReply,
    model: &str,
    include_usage: bool,
    shutdown: CancellationToken,
) -> Response {
    let all = chunks(reply, model, include_usage);
    let body: Body = match reply.fault {
        None => {
            let frames = all.iter().map(String::as_str).chain(["[DONE]"]).map(frame);
            Body::from_stream(stream::iter(frames.collect::<Vec<_>>()))
        }
        Some(Fault::CutAfter(n)) => {
            let frames: Vec<_> = all.iter().take(n).map(|c| frame(c)).collect();
            Body::from_stream(stream::iter(frames))
        }
        Some(Fault::MalformedAfter(n)) => {
            let mut frames: Vec<_> = all.iter().take(n).map(|c| frame(c)).collect();
            frames.push(frame("{\"choices\":[{\"delta\":{\"content\":"));
            Body::from_stream(stream::iter(frames))
        }
        Some(Fault::Endless(every)) => {
            let first = stream::iter(all.into_iter().take(1).map(|c| frame(&c)));
            Body::from_stream(first.chain(endless(model.to_string(), every, shutdown)))
        }
    };
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// A content chunk every `every`, until the server shuts down or the client goes away.
fn endless(
    model: String,
    every: Duration,
    shutdown: CancellationToken,
) -> impl Stream<Item = Result<Bytes, std::convert::Infallible>> + Send {
    stream::unfold((), move |()| {
        let model = model.clone();
        let shutdown = shutdown.clone();
        async move {
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = shutdown.cancelled() => return None,
            }
            let chunk = json!({
                "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                "model": model, "choices": [{"index": 0, "delta": {"content": "tick "}}],
            });
            Some((frame(&chunk.to_string()), ()))
        }
    })
}
