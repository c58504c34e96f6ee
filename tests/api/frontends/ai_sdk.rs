//! The `ai` package's own chat (AbstractChat + DefaultChatTransport, the logic behind `useChat`)
//! against `POST /ai-sdk/{agent}`: every chunk passes its schema, the message it builds is what
//! the run did.

use reagent::llm::{LlmError, ToolCall};
use reagent::testing::scripted::{response, Turn};
use serde_json::{json, Value};

use super::{app, node, pairs, steps, stored, ALICE};

fn types(step: &Value) -> Vec<String> {
    step["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap().to_string())
        .collect()
}

fn stream(chunks: &[&str]) -> Turn {
    Turn::Stream(chunks.iter().map(|c| c.to_string()).collect(), None)
}

fn tool_reply(reasoning: &str, id: &str, name: &str, args: &str) -> Turn {
    let call = ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    };
    Turn::Reply(response(reasoning, vec![call]), std::time::Duration::ZERO)
}

/// The parts of the chat's message `index`, by type.
fn parts<'a>(seen: &'a Value, index: usize, kind: &str) -> Vec<&'a Value> {
    seen["messages"][index]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == kind)
        .collect()
}

#[tokio::test]
async fn text_reasoning_and_tool_parts_build_the_assistant_message() {
    let app = app().await;
    app.llm
        .push(tool_reply("Checking.", "e1", "echo", r#"{"text":"hi"}"#));
    app.llm.text("brief");
    app.llm.push_stream(stream(&["Echoed ", "hi."]));
    app.llm.text("brief two");
    app.llm.push_stream(stream(&["Plain."]));
    let plan = steps(json!([{"user": "echo hi"}, {"user": "and now?"}]));
    let seen = node(
        "ai_sdk_chat.mjs",
        &[app.url("/ai-sdk/helper"), ALICE.into(), plan],
    )
    .await;
    let first = &seen["steps"][0];
    assert_eq!(first["status"], "ready", "{first}");
    assert_eq!(first["errors"], json!([]));
    assert_eq!(
        types(first),
        [
            "start",
            "start-step",
            "reasoning-start",
            "reasoning-delta",
            "reasoning-end",
            "tool-input-start",
            "tool-input-available",
            "tool-output-available",
            "text-start",
            "text-delta",
            "text-delta",
            "text-end",
            "finish-step",
            "finish",
        ]
    );
    // The message the SDK built: reasoning, a dynamic tool part with its output, the text.
    assert_eq!(parts(&seen, 1, "reasoning")[0]["text"], "Checking.");
    let tool = parts(&seen, 1, "dynamic-tool")[0];
    assert_eq!(tool["toolName"], "echo");
    assert_eq!(tool["state"], "output-available");
    assert_eq!(tool["input"], json!({"text": "hi"}));
    assert!(tool["output"].as_str().unwrap().contains("hi"), "{tool}");
    assert_eq!(parts(&seen, 1, "text")[0]["text"], "Echoed hi.");
    assert_eq!(parts(&seen, 3, "text")[0]["text"], "Plain.");
    let chat = seen["chatId"].as_str().unwrap();
    let conversation = seen["messages"][1]["metadata"]["conversationId"]
        .as_str()
        .unwrap();
    assert_eq!(
        stored(&app, conversation).await,
        pairs(&[
            ("user", "echo hi"),
            ("assistant", "Echoed hi."),
            ("user", "and now?"),
            ("assistant", "Plain."),
        ]),
        "chat {chat}"
    );
}

#[tokio::test]
async fn an_approval_request_is_answered_with_add_tool_approval_response() {
    let app = app().await;
    app.llm
        .push(tool_reply("", "d1", "deploy", r#"{"env":"prod"}"#));
    app.llm.text("brief");
    app.llm.push_stream(stream(&["Deployed."]));
    let plan = steps(json!([{"user": "deploy prod"}, {"approve": true}]));
    let seen = node(
        "ai_sdk_chat.mjs",
        &[app.url("/ai-sdk/helper"), ALICE.into(), plan],
    )
    .await;
    let asked = &seen["steps"][0];
    assert!(
        types(asked).contains(&"tool-approval-request".to_string()),
        "{asked}"
    );
    assert_eq!(types(asked).last().unwrap(), "finish");
    let resumed = &seen["steps"][1];
    assert_eq!(resumed["errors"], json!([]), "{resumed}");
    assert_eq!(resumed["status"], "ready");
    // The continuation went into the same assistant message: the call ran, then the answer.
    assert_eq!(seen["messages"].as_array().unwrap().len(), 2, "{seen}");
    let tool = parts(&seen, 1, "dynamic-tool")[0];
    assert_eq!(tool["state"], "output-available", "{tool}");
    assert!(
        tool["output"].as_str().unwrap().contains("deployed to"),
        "{tool}"
    );
    assert_eq!(parts(&seen, 1, "text")[0]["text"], "Deployed.");
}

#[tokio::test]
async fn a_failed_run_is_an_error_chunk_the_chat_reports() {
    let app = app().await;
    app.llm.push(Turn::Fail(LlmError::Status {
        status: 401,
        body: "bad key".into(),
    }));
    let plan = steps(json!([{"user": "hello"}]));
    let seen = node(
        "ai_sdk_chat.mjs",
        &[app.url("/ai-sdk/helper"), ALICE.into(), plan],
    )
    .await;
    let step = &seen["steps"][0];
    // The run's fallback answer, then the error (the SDK stops reading at it; reagent still
    // closes the stream with `finish` and `[DONE]`).
    assert_eq!(
        types(step),
        [
            "start",
            "start-step",
            "text-start",
            "text-delta",
            "text-end",
            "error"
        ]
    );
    assert_eq!(step["status"], "error");
    assert!(
        step["errors"][0].as_str().unwrap().contains("401"),
        "{step}"
    );
}

#[tokio::test]
async fn a_client_tool_is_answered_with_add_tool_output() {
    let app = app().await;
    app.llm
        .push(tool_reply("", "f1", "pick_color", r#"{"of":"sky"}"#));
    app.llm.text("brief");
    app.llm.push_stream(stream(&["The sky is blue."]));
    let tools = json!([{"name": "pick_color", "description": "Asks the user for a color",
                        "parameters": {"type": "object", "properties": {"of": {"type": "string"}}}}]);
    let plan = steps(json!([{"user": "what color?", "tools": tools}]));
    let seen = node(
        "ai_sdk_chat.mjs",
        &[app.url("/ai-sdk/helper"), ALICE.into(), plan],
    )
    .await;
    let step = &seen["steps"][0];
    assert_eq!(step["errors"], json!([]), "{step}");
    assert_eq!(step["status"], "ready");
    let chunks = step["chunks"].as_array().unwrap();
    let asked = chunks
        .iter()
        .find(|c| c["type"] == "tool-input-available")
        .unwrap();
    assert_eq!(asked["toolName"], "pick_color");
    assert!(asked.get("providerExecuted").is_none(), "{asked}");
    let finish = chunks.iter().find(|c| c["type"] == "finish").unwrap();
    assert_eq!(finish["finishReason"], "tool-calls");
    // onToolCall's addToolOutput sent the output; the run went on in the same message.
    assert_eq!(seen["messages"].as_array().unwrap().len(), 2, "{seen}");
    let tool = parts(&seen, 1, "dynamic-tool")[0];
    assert_eq!(tool["state"], "output-available", "{tool}");
    let texts: Vec<&str> = parts(&seen, 1, "text")
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["The sky is blue."]);
    let last = app.llm.chat_requests().pop().unwrap();
    let sent = serde_json::to_string(&last.messages).unwrap();
    assert!(
        sent.contains(r#"client: pick_color({\"of\":\"sky\"})"#),
        "{sent}"
    );
}
