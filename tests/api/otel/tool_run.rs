//! The checks of a tool run's trace, one per span or direction, for
//! `a_tool_run_is_one_trace_of_agent_chat_and_tool_spans_in_the_callers_trace`.

use reagent::testing::fake_openai::FakeOpenAi;
use serde_json::Value;

use super::{sum, Probe, CALLER_SPAN, CALLER_TRACE};
use crate::support::otlp::{Attr, Span};

/// `start` and `done` carry the caller's trace, and `done` its URL.
pub(super) fn the_run_reports_the_callers_trace(start: &Value, done: &Value) {
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        start["trace_id"], CALLER_TRACE,
        "the caller's trace is adopted"
    );
    assert_eq!(done["trace_id"], CALLER_TRACE);
    assert_eq!(
        done["trace_url"],
        format!("http://phoenix:6006/trace/{CALLER_TRACE}")
    );
}

/// The agent span is a child of the caller's, with the run's ids and token counts.
pub(super) fn the_agent_span_is_the_callers_child(agent: &Span, start: &Value, done: &Value) {
    assert_eq!(agent.trace_id, CALLER_TRACE);
    assert_eq!(
        agent.parent_span_id, CALLER_SPAN,
        "a child of the caller's span"
    );
    assert_eq!(agent.kind, 1, "internal");
    assert_eq!(agent.service, "reagent");
    assert_eq!(agent.str("gen_ai.operation.name"), Some("invoke_agent"));
    assert_eq!(agent.str("gen_ai.agent.name"), Some("reagent"));
    let conversation = start["conversation_id"].as_str().unwrap();
    assert_eq!(agent.str("gen_ai.conversation.id"), Some(conversation));
    assert_eq!(agent.str("reagent.run.id"), start["run_id"].as_str());
    assert_eq!(
        agent.int("gen_ai.usage.input_tokens"),
        done["usage"]["prompt_tokens"].as_i64()
    );
    assert_eq!(
        agent.int("gen_ai.usage.output_tokens"),
        done["usage"]["completion_tokens"].as_i64()
    );
}

/// Each chat span is a client child of the agent's, a loop call, and together they sum to
/// the run's usage.
pub(super) fn the_chat_spans_are_the_loops_calls(
    chats: &[&Span],
    agent: &Span,
    done: &Value,
    llm: &FakeOpenAi,
) {
    let calls = done["usage"]["llm_calls"].as_u64().unwrap() as usize;
    assert!(
        calls >= 2,
        "two loop calls, the last one's reply the answer: {done}"
    );
    assert_eq!(done["synthesis"], false, "{done}");
    for c in chats {
        assert_eq!(c.kind, 3, "client");
        assert_eq!(c.parent_span_id, agent.span_id, "{}", c.name);
        assert_eq!(c.trace_id, CALLER_TRACE);
        assert_eq!(c.str("gen_ai.operation.name"), Some("chat"));
        assert_eq!(c.str("gen_ai.provider.name"), Some("127.0.0.1"));
        assert_eq!(c.str("server.address"), Some("127.0.0.1"));
        assert_eq!(c.int("server.port"), Some(i64::from(llm.addr().port())));
        assert!(c.str("gen_ai.request.model").is_some());
        assert!(matches!(
            c.attributes.get("gen_ai.response.finish_reasons"),
            Some(Attr::List(_))
        ));
        assert!(
            !c.attributes.contains_key("gen_ai.input.messages"),
            "no content unless asked"
        );
    }
    // Each call says what it was for: the loop's (streamed, the last reply the answer).
    let kinds: Vec<&str> = chats
        .iter()
        .map(|c| c.str("reagent.call_kind").unwrap_or("none"))
        .collect();
    assert_eq!(kinds, vec!["loop"; calls]);
    assert_eq!(
        sum(chats, "gen_ai.usage.input_tokens"),
        done["usage"]["prompt_tokens"].as_i64().unwrap()
    );
    assert_eq!(
        sum(chats, "gen_ai.usage.output_tokens"),
        done["usage"]["completion_tokens"].as_i64().unwrap()
    );
}

/// The tool span is an internal child of the agent's, without the call's arguments.
pub(super) fn the_tool_span_is_the_agents_child(tool: &Span, agent: &Span) {
    assert_eq!(tool.parent_span_id, agent.span_id);
    assert_eq!(tool.kind, 1);
    assert_eq!(tool.str("gen_ai.tool.name"), Some("probe"));
    assert_eq!(tool.str("gen_ai.tool.call.id"), Some("call_1"));
    assert_eq!(tool.str("gen_ai.tool.type"), Some("function"));
    assert!(!tool.attributes.contains_key("gen_ai.tool.call.arguments"));
}

/// Out: the tool's request carries the tool span, each provider request its chat span.
pub(super) fn requests_out_carry_their_spans(
    probe: &Probe,
    tool: &Span,
    llm: &FakeOpenAi,
    chats: &[&Span],
) {
    let seen = probe.seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![Some(format!("00-{CALLER_TRACE}-{}-01", tool.span_id))]
    );
    let sent = llm.traceparents();
    assert_eq!(sent.len(), chats.len());
    for tp in sent {
        let tp = tp.expect("a traceparent to the provider");
        let span_id = tp.split('-').nth(2).unwrap();
        assert!(chats.iter().any(|c| c.span_id == span_id), "{tp}");
    }
}
