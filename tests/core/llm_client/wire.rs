//! The OpenAI wire format of requests, tool_choice omitted without tools, and the fake's
//! default reply to an empty script.

use super::*;

fn full_request(choice: ToolChoice) -> ChatRequest {
    let mut assistant = Message::assistant_tool_calls("", calls(&TWO_CALLS[..1]));
    assistant.reasoning_content = Some("secret thoughts".into());
    ChatRequest {
        messages: vec![
            Message::system("be brief").pinned(),
            Message::user("what is it?").pinned(),
            assistant,
            Message::tool("call_1", "12"),
        ]
        .into(),
        tools: vec![ToolDefinition {
            name: "calculator".into(),
            description: "Arithmetic".into(),
            parameters: json!({"type": "object", "properties": {"expression": {"type": "string"}}}),
        }]
        .into(),
        tool_choice: Some(choice),
        response_format: Some(ResponseFormat::JsonObject),
        temperature: Some(0.2),
        top_p: Some(0.9),
        seed: Some(7),
        max_tokens: Some(100),
    }
}

#[tokio::test]
async fn requests_use_the_openai_wire_format() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 0);
    llm.chat(full_request(ToolChoice::Function("calculator".into())))
        .await
        .unwrap();
    for choice in [ToolChoice::Auto, ToolChoice::None, ToolChoice::Required] {
        llm.chat(full_request(choice)).await.unwrap();
    }
    let sent = fake.requests();
    let first = &sent[0];
    assert_eq!(first["model"], json!("fake-model"));
    assert_eq!(
        first["messages"],
        json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "what is it?"},
            {"role": "assistant", "content": null, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": "calculator", "arguments": TWO_CALLS[0].2},
            }]},
            {"role": "tool", "tool_call_id": "call_1", "content": "12"},
        ])
    );
    assert_eq!(
        first["tools"],
        json!([{"type": "function", "function": {
            "name": "calculator", "description": "Arithmetic",
            "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}},
        }}])
    );
    assert_eq!(
        first["tool_choice"],
        json!({"type": "function", "function": {"name": "calculator"}})
    );
    assert_eq!(first["response_format"], json!({"type": "json_object"}));
    assert_eq!(first["temperature"], json!(0.2));
    assert_eq!((&first["top_p"], &first["seed"]), (&json!(0.9), &json!(7)));
    assert_eq!(first["max_tokens"], json!(100));
    assert!(first.get("stream").is_none());
    let choices: Vec<_> = sent[1..].iter().map(|r| r["tool_choice"].clone()).collect();
    assert_eq!(
        choices,
        vec![json!("auto"), json!("none"), json!("required")]
    );
    for request in &sent {
        let text = request.to_string();
        assert!(!text.contains("pinned"), "{text}");
        assert!(
            !text.contains("reasoning_content") && !text.contains("secret"),
            "{text}"
        );
    }
    assert_eq!(
        fake.authorizations(),
        vec![Some("Bearer sk-test".to_string()); 4]
    );
}

#[tokio::test]
async fn tool_choice_is_omitted_without_tools() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 0);
    let mut request = ask();
    request.tool_choice = Some(ToolChoice::Auto);
    request.response_format = Some(ResponseFormat::Text);
    llm.chat(request).await.unwrap();
    let sent = &fake.requests()[0];
    assert!(
        sent.get("tools").is_none() && sent.get("tool_choice").is_none(),
        "{sent}"
    );
    assert!(sent.get("response_format").is_none(), "{sent}");
}

#[tokio::test]
async fn an_empty_script_answers_a_default_text() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 0);
    assert_eq!(llm.chat(ask()).await.unwrap().content, FAKE_DEFAULT_TEXT);
    let streamed = collect_stream(llm.stream_chat(ask()).await.unwrap())
        .await
        .unwrap();
    assert_eq!(streamed.content, FAKE_DEFAULT_TEXT);
    fake.set_default(FakeReply::text("custom"));
    assert_eq!(llm.chat(ask()).await.unwrap().content, "custom");
}
