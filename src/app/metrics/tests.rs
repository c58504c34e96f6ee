use std::sync::Arc;

use super::*;
use crate::llm::{ChatRequest, ToolDefinition};
use crate::server::Metrics;
use crate::testing::ScriptedLlm;

#[tokio::test]
async fn calls_written_in_the_content_are_counted_only_for_known_tools() {
    let m = Metrics::new();
    let scripted = Arc::new(ScriptedLlm::native());
    scripted
        .text(
            r#"[{"name": "calculator", "arguments": {}}, {"name": "calculator", "arguments": {}}]"#,
        )
        .text(r#"{"name": "web_search", "arguments": {}}"#)
        .text(r#"{"name": "calculator", "arguments": {}}"#);
    let llm = MeteredLlm {
        inner: scripted,
        name: "small".into(),
        metrics: m.clone(),
    };
    let mut with_tools = ChatRequest::new(vec![]);
    with_tools.tools = Arc::from(vec![ToolDefinition {
        name: "calculator".into(),
        description: String::new(),
        parameters: serde_json::json!({}),
    }]);
    llm.chat(with_tools.clone()).await.unwrap();
    llm.chat(with_tools).await.unwrap();
    // Without tools in the request (JSON mode, compaction) nothing is a native call.
    llm.chat(ChatRequest::new(vec![])).await.unwrap();
    let text = m.render(0);
    assert!(
        text.contains("reagent_llm_content_tool_calls_total{model=\"small\"} 2\n"),
        "{text}"
    );
}

#[tokio::test]
async fn tool_names_that_resolve_to_a_tool_are_counted() {
    let m = Metrics::new();
    let scripted = Arc::new(ScriptedLlm::native());
    scripted
        .tool_calls(&[("a", "lookup", "{}"), ("b", "demo__lookup", "{}")])
        .text(r#"{"name": "Lookup", "arguments": {}}"#)
        .tool_calls(&[("c", "nope", "{}")]);
    let llm = MeteredLlm {
        inner: scripted,
        name: "small".into(),
        metrics: m.clone(),
    };
    let mut with_tools = ChatRequest::new(vec![]);
    with_tools.tools = Arc::from(vec![ToolDefinition {
        name: "demo__lookup".into(),
        description: String::new(),
        parameters: serde_json::json!({}),
    }]);
    for _ in 0..3 {
        llm.chat(with_tools.clone()).await.unwrap();
    }
    let text = m.render(0);
    // `lookup` and `Lookup` named the tool; the exact name and an unknown one are not counted.
    assert!(
        text.contains("reagent_tool_name_resolved_total{model=\"small\"} 2\n"),
        "{text}"
    );
}

#[tokio::test]
async fn streamed_loop_calls_are_counted_like_unstreamed_ones() {
    let m = Metrics::new();
    let scripted = Arc::new(ScriptedLlm::native());
    scripted
        .stream_text(&[r#"{"name": "calculator", "#, r#""arguments": {}}"#])
        .stream_tool_calls("", &[("a", "Calculator", "{}")]);
    let llm = MeteredLlm {
        inner: scripted,
        name: "small".into(),
        metrics: m.clone(),
    };
    let mut with_tools = ChatRequest::new(vec![]);
    with_tools.tools = Arc::from(vec![ToolDefinition {
        name: "calculator".into(),
        description: String::new(),
        parameters: serde_json::json!({}),
    }]);
    for _ in 0..2 {
        let stream = llm.stream_chat(with_tools.clone()).await.unwrap();
        crate::llm::collect_stream(stream).await.unwrap();
    }
    let text = m.render(0);
    assert!(
        text.contains("reagent_llm_content_tool_calls_total{model=\"small\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains("reagent_tool_name_resolved_total{model=\"small\"} 1\n"),
        "{text}"
    );
}
