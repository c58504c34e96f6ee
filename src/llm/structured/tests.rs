use super::*;
use crate::llm::{Abilities, LlmError};
use crate::testing::{ScriptedLlm, Turn};
use serde_json::json;

const GOOD: &str = r#"{"tools": ["search", "calc"]}"#;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"tools": {"type": "array", "items": {"type": "string"}}},
        "required": ["tools"]
    })
}

/// The tool-selection shape: `parse_fn` insists on a list of strings.
fn selection_call(default_value: Option<Vec<String>>) -> StructuredCall<'static, Vec<String>> {
    StructuredCall {
        messages: vec![
            Message::system("You select tools."),
            Message::user("Which tools?"),
        ],
        schema_name: "select_tools".into(),
        schema: schema(),
        parse_fn: Box::new(|raw: &Value| {
            raw.get("tools")
                .and_then(Value::as_array)
                .ok_or_else(|| "`tools` must be an array".to_string())?
                .iter()
                .map(|t| {
                    t.as_str()
                        .map(String::from)
                        .ok_or("not a string".to_string())
                })
                .collect()
        }),
        default_value,
        regex_fallback: None,
    }
}

fn expected() -> Vec<String> {
    vec!["search".into(), "calc".into()]
}

/// `calls` calls of which `replies` answered (10 + 5 tokens each).
fn usage(calls: u64, replies: u64) -> Usage {
    Usage {
        prompt_tokens: 10 * replies,
        completion_tokens: 5 * replies,
        total_tokens: 15 * replies,
        llm_calls: calls,
        ..Usage::default()
    }
}

fn fail() -> Turn {
    Turn::Fail(LlmError::Status {
        status: 500,
        body: "boom".into(),
    })
}

#[tokio::test]
async fn level1_succeeds_in_one_call_with_a_forced_function() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "select_tools", GOOD)]);
    let out = structured_llm_call(&llm, selection_call(None))
        .await
        .unwrap();
    assert_eq!((out.level, out.llm_calls), (1, 1));
    assert_eq!(out.value, expected());
    assert_eq!(out.raw, serde_json::from_str::<Value>(GOOD).unwrap());
    assert_eq!(out.usage, usage(1, 1));
    let requests = llm.chat_requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(
        r.tool_choice,
        Some(ToolChoice::Function("select_tools".into()))
    );
    assert_eq!(r.tools.len(), 1);
    assert_eq!(r.tools[0].name, "select_tools");
    assert_eq!(r.tools[0].parameters, schema());
    assert_eq!(r.response_format, None);
    assert_eq!(*r.messages, selection_call(None).messages);
}

#[tokio::test]
async fn level1_without_tool_choice_sends_auto_and_reads_json_in_content() {
    let llm = ScriptedLlm::new(Abilities {
        tool_call: true,
        json_mode: false,
        tool_choice: false,
        vision: false,
        json_schema: false,
    });
    llm.text(&format!("Here:\n```json\n{GOOD}\n```"));
    let out = structured_llm_call(&llm, selection_call(None))
        .await
        .unwrap();
    assert_eq!((out.level, out.llm_calls, out.value), (1, 1, expected()));
    let r = &llm.chat_requests()[0];
    assert_eq!(r.tool_choice, Some(ToolChoice::Auto));
    assert_eq!(r.tools.len(), 1);
    assert_eq!(r.messages[0].role, Role::System);
    assert!(r.messages[0].content.starts_with("You select tools."));
    assert!(r.messages[0].content.contains("`select_tools`"));
}

#[tokio::test]
async fn broken_arguments_fall_back_to_json_in_content() {
    let llm = ScriptedLlm::native();
    let mut reply = crate::testing::scripted::response(GOOD, vec![]);
    reply.tool_calls.push(crate::llm::ToolCall {
        id: "c1".into(),
        name: "select_tools".into(),
        arguments: "{\"tools\": [".into(),
    });
    llm.push(Turn::Reply(reply, std::time::Duration::ZERO));
    let out = structured_llm_call(&llm, selection_call(None))
        .await
        .unwrap();
    assert_eq!((out.level, out.llm_calls, out.value), (1, 1, expected()));
}

#[tokio::test]
async fn unusable_function_call_degrades_to_json_mode() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "select_tools", "not json at all")]);
    llm.text(GOOD);
    let out = structured_llm_call(&llm, selection_call(None))
        .await
        .unwrap();
    assert_eq!((out.level, out.llm_calls, out.value), (2, 2, expected()));
    assert_eq!(out.usage, usage(2, 2));
    let r = &llm.chat_requests()[1];
    assert_eq!(r.response_format, Some(ResponseFormat::JsonObject));
    assert!(r.tools.is_empty());
    assert_eq!(r.tool_choice, None);
    assert!(r.messages[0].content.contains(&schema().to_string()));
    assert!(r.messages[0].content.contains("JSON"));
}

#[tokio::test]
async fn bad_json_mode_reply_is_retried_once_with_the_reformat_prompt() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[]);
    llm.text("Sorry, I think the tools are search and calc.");
    llm.text(GOOD);
    let out = structured_llm_call(&llm, selection_call(None))
        .await
        .unwrap();
    assert_eq!((out.level, out.llm_calls, out.value), (2, 3, expected()));
    assert_eq!(out.usage, usage(3, 3));
    let requests = llm.chat_requests();
    let retry = &requests[2];
    assert_eq!(retry.response_format, Some(ResponseFormat::JsonObject));
    let n = retry.messages.len();
    assert_eq!(n, requests[1].messages.len() + 2);
    assert_eq!(retry.messages[n - 2].role, Role::Assistant);
    assert_eq!(
        retry.messages[n - 2].content,
        "Sorry, I think the tools are search and calc."
    );
    assert_eq!(retry.messages[n - 1].role, Role::User);
    assert!(retry.messages[n - 1]
        .content
        .contains("could not be parsed as valid JSON"));
    assert!(retry.messages[n - 1]
        .content
        .contains(&schema().to_string()));
}

#[tokio::test]
async fn json_only_model_starts_at_level2() {
    let llm = ScriptedLlm::json();
    llm.text(GOOD);
    let out = structured_llm_call(&llm, selection_call(None))
        .await
        .unwrap();
    assert_eq!((out.level, out.llm_calls), (2, 1));
    assert!(llm.chat_requests()[0].tools.is_empty());
}

#[tokio::test]
async fn text_only_model_uses_level3_and_extract_json_on_prose() {
    let llm = ScriptedLlm::new(Abilities::text_only());
    llm.text(&format!("Sure! I would pick {GOOD} for this query."));
    let out = structured_llm_call(&llm, selection_call(None))
        .await
        .unwrap();
    assert_eq!((out.level, out.llm_calls, out.value), (3, 1, expected()));
    let r = &llm.chat_requests()[0];
    assert_eq!(r.response_format, None);
    assert!(r.tools.is_empty());
    assert_eq!(r.tool_choice, None);
    assert!(r.messages[0].content.contains(&schema().to_string()));
}

#[tokio::test]
async fn level3_without_system_message_gets_one_in_front() {
    let llm = ScriptedLlm::new(Abilities::text_only());
    llm.text(GOOD);
    let mut call = selection_call(None);
    call.messages = vec![Message::user("Which tools?")];
    structured_llm_call(&llm, call).await.unwrap();
    let messages = &llm.chat_requests()[0].messages;
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0].role, Role::System);
    assert!(messages[0].content.contains(&schema().to_string()));
    assert_eq!(messages[1], Message::user("Which tools?"));
}

#[tokio::test]
async fn regex_fallback_is_used_when_no_json_is_found() {
    let llm = ScriptedLlm::new(Abilities::text_only());
    llm.text("tools: search, calc");
    let mut call = selection_call(None);
    call.regex_fallback = Some(Box::new(|text: &str| {
        let list = text.strip_prefix("tools:")?;
        let names: Vec<&str> = list.split(',').map(str::trim).collect();
        Some(json!({ "tools": names }))
    }));
    let out = structured_llm_call(&llm, call).await.unwrap();
    assert_eq!((out.level, out.llm_calls, out.value), (3, 1, expected()));
    assert_eq!(out.raw, json!({"tools": ["search", "calc"]}));
}

#[tokio::test]
async fn parse_fn_error_degrades_to_the_next_level() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "select_tools", r#"{"tools": 3}"#)]);
    llm.text(GOOD);
    let out = structured_llm_call(&llm, selection_call(None))
        .await
        .unwrap();
    assert_eq!((out.level, out.llm_calls, out.value), (2, 2, expected()));
}

#[tokio::test]
async fn llm_errors_degrade_without_retrying_the_level() {
    let llm = ScriptedLlm::native();
    llm.push(fail()); // level 1
    llm.push(fail()); // level 2: an error skips its retry
    llm.text(GOOD); // level 3
    let out = structured_llm_call(&llm, selection_call(None))
        .await
        .unwrap();
    assert_eq!((out.level, out.llm_calls, out.value), (3, 3, expected()));
    assert_eq!(out.usage, usage(3, 1));
    assert_eq!(llm.remaining(), 0);
}

#[tokio::test]
async fn total_failure_makes_five_calls_then_uses_the_default() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[]);
    for _ in 0..4 {
        llm.text("no idea");
    }
    let fallback = vec!["everything".to_string()];
    let out = structured_llm_call(&llm, selection_call(Some(fallback.clone())))
        .await
        .unwrap();
    assert_eq!((out.level, out.llm_calls), (0, 5));
    assert_eq!(out.value, fallback);
    assert_eq!(out.raw, Value::Null);
    assert_eq!(out.usage, usage(5, 5));
    assert_eq!(llm.chat_requests().len(), 5);
}

#[tokio::test]
async fn total_failure_without_default_is_a_typed_error() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "select_tools", "{}")]);
    llm.text("no idea");
    llm.push(fail());
    llm.text("still nothing");
    llm.text(r#"{"tools": [1]}"#);
    let err = structured_llm_call(&llm, selection_call(None))
        .await
        .unwrap_err();
    let StructuredError::Exhausted {
        llm_calls,
        usage: total,
        last_error,
    } = err;
    assert_eq!(llm_calls, 5);
    assert_eq!(total, usage(5, 4));
    assert!(last_error.starts_with("level 3:"), "{last_error}");
    assert!(last_error.contains("not a string"), "{last_error}");
}

#[test]
fn the_future_is_send() {
    fn assert_send<F: Send>(_: &F) {}
    let llm = ScriptedLlm::native();
    let future = structured_llm_call(&llm, selection_call(None));
    assert_send(&future);
}

#[tokio::test]
async fn a_reply_over_the_size_limit_is_not_read_nor_sent_back() {
    let llm = ScriptedLlm::new(Abilities::default());
    let huge = format!(
        r#"{{"tools": ["{}"]}}"#,
        "s".repeat(MAX_STRUCTURED_REPLY_BYTES)
    );
    llm.tool_calls(&[("c1", "select_tools", &huge)])
        .text(&huge)
        .text(GOOD);
    let r = structured_llm_call(&llm, selection_call(None))
        .await
        .unwrap();
    assert_eq!(r.value, expected());
    assert_eq!(
        r.level, 2,
        "level 1 and the first JSON-mode reply were too large"
    );
    let retry = &llm.chat_requests()[2];
    let sent: usize = retry.messages.iter().map(|m| m.content.len()).sum();
    assert!(sent < 10_000, "{sent} bytes sent back");
    let quoted = &retry.messages.last().unwrap().content;
    assert!(
        quoted.contains("more than the 1048576 a structured reply may have"),
        "{quoted}"
    );
}

#[tokio::test]
async fn the_reformat_retry_gives_the_reply_back_with_its_continuity() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[]);
    let mut reply = crate::testing::scripted::response("not JSON at all", vec![]);
    reply.continuity = crate::llm::Continuity::of(
        "scripted",
        serde_json::from_str(r#"{"reasoning_content":"hmm"}"#).unwrap_or_default(),
        vec![],
    );
    llm.push(Turn::Reply(reply.clone(), std::time::Duration::ZERO));
    llm.text(GOOD);
    let out = structured_llm_call(&llm, selection_call(None)).await;
    assert_eq!(out.map(|o| o.level), Ok(2));
    let requests = llm.chat_requests();
    let retry = &requests[2];
    let given_back = &retry.messages[retry.messages.len() - 2];
    assert_eq!(given_back.continuity.as_deref(), reply.continuity.as_ref());
}
