//! Usage is accounting, not content: a provider's odd `usage` object (floats, strings,
//! negative or huge counts, not an object at all) never costs a reply its tool calls, on
//! either path, and counts saturate at what the databases store (`i64::MAX`).

use serde_json::Value;

use super::*;

const MAX: u64 = i64::MAX as u64;

/// Usage objects and the `(prompt, completion)` counted from each.
fn odd_usages() -> Vec<(Value, u64, u64)> {
    vec![
        (
            json!({"prompt_tokens": 12.7, "completion_tokens": "5"}),
            12,
            5,
        ),
        (
            json!({"prompt_tokens": -4, "completion_tokens": "many"}),
            0,
            0,
        ),
        (
            json!({"prompt_tokens": [1], "completion_tokens": {"n": 2}}),
            0,
            0,
        ),
        (
            json!({"prompt_tokens": u64::MAX, "completion_tokens": u64::MAX - 1, "total_tokens": -1}),
            MAX,
            MAX,
        ),
        (
            json!({"prompt_tokens": 1e300, "completion_tokens": "1e3"}),
            MAX,
            1000,
        ),
        (json!("not an object"), 0, 0),
    ]
}

fn reply(usage: &Value) -> FakeReply {
    FakeReply::tool_calls(vec![("c1", "lookup", r#"{"q":"x"}"#)]).raw_usage(usage.clone())
}

fn check(what: &str, usage: &Value, got: &reagent::llm::ChatResponse, p: u64, c: u64) {
    let names: Vec<&str> = got.tool_calls.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["lookup"], "{what} with usage {usage}");
    assert_eq!(
        (got.usage.prompt_tokens, got.usage.completion_tokens),
        (p, c),
        "{what} with usage {usage}"
    );
    assert_eq!(got.usage.total_tokens, p.saturating_add(c).min(MAX));
    assert_eq!(got.usage.llm_calls, 1);
}

#[tokio::test]
async fn odd_usage_never_costs_a_reply_its_tool_calls() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 0);
    for (usage, p, c) in odd_usages() {
        fake.push(reply(&usage));
        let whole = llm.chat(ask()).await.expect("the reply is read");
        check("non-streamed", &usage, &whole, p, c);
        fake.push(reply(&usage));
        let stream = llm.stream_chat(ask()).await.expect("the stream opens");
        let streamed = collect_stream(stream).await.expect("the stream is read");
        check("streamed", &usage, &streamed, p, c);
    }
}
