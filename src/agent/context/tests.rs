use super::*;
use crate::llm::{LlmError, ToolCall};
use crate::testing::scripted::{
    ScriptedLlm, Turn, SCRIPTED_COMPLETION_TOKENS, SCRIPTED_PROMPT_TOKENS,
};

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "lookup".into(),
        arguments: format!(r#"{{"key":"{id}"}}"#),
    }
}

fn tool_def(schema: serde_json::Value) -> ToolDefinition {
    ToolDefinition {
        name: "lookup".into(),
        description: "Looks a key up.".into(),
        parameters: schema,
    }
}

/// System, pinned query, then `rounds` of (assistant with reasoning and two tool calls, two
/// ~800-byte results); a pinned interrupt after round 1.
fn history(rounds: usize) -> Vec<Message> {
    let pad = "x".repeat(800);
    let mut h = vec![
        Message::system("You are an agent."),
        Message::user("QUERY: find the thing").pinned(),
    ];
    for r in 0..rounds {
        let mut a = Message::assistant_tool_calls(
            format!("step {r}: look up a{r} and b{r}"),
            vec![call(&format!("a{r}")), call(&format!("b{r}"))],
        );
        a.reasoning_content = Some(format!("thinking {r}"));
        h.push(a);
        h.push(Message::tool(format!("b{r}"), format!("FACT-b{r} {pad}")));
        h.push(Message::tool(format!("a{r}"), format!("FACT-a{r} {pad}")));
        if r == 1 {
            h.push(Message::user("[USER INTERRUPT]\n- also check c").pinned());
        }
    }
    h
}

fn summary_index(out: &[Message]) -> Option<usize> {
    out.iter().position(|m| {
        m.content.starts_with("[Context summary of ")
            || m.content.contains("earlier messages were removed")
    })
}

#[test]
fn estimate_is_linear_and_follows_the_documented_formula() {
    let one = vec![Message::user("abcd".repeat(25))];
    assert_eq!(estimate_tokens(&one, &[]), 25 + MESSAGE_OVERHEAD_TOKENS);
    for n in 1..=20 {
        let many: Vec<Message> = one.iter().cycle().take(n).cloned().collect();
        assert_eq!(estimate_tokens(&many, &[]), n * estimate_tokens(&one, &[]));
    }
    // Reasoning is never sent back, tool calls are.
    let mut thinking = one[0].clone();
    thinking.reasoning_content = Some("r".repeat(4_000));
    assert_eq!(
        estimate_message_tokens(&[thinking]),
        estimate_message_tokens(&one)
    );
    let calls = Message::assistant_tool_calls("abcd".repeat(25), vec![call("c1")]);
    assert!(estimate_message_tokens(&[calls]) > estimate_message_tokens(&one));
}

#[test]
fn estimate_counts_tool_definitions() {
    let msgs = history(1);
    let small = tool_def(serde_json::json!({"type": "object"}));
    let big = tool_def(serde_json::json!({
        "type": "object",
        "properties": {"key": {"type": "string", "description": "k".repeat(400)}}
    }));
    let one_small = std::slice::from_ref(&small);
    let small_tokens = estimate_tool_tokens(one_small);
    // {"type":"object"} is 17 bytes: ceil((6 + 15 + 17) / 4) + overhead.
    assert_eq!(small_tokens, 10 + TOOL_OVERHEAD_TOKENS);
    assert_eq!(
        estimate_tokens(&msgs, one_small) - estimate_tokens(&msgs, &[]),
        small_tokens
    );
    assert!(estimate_tool_tokens(std::slice::from_ref(&big)) > small_tokens + 100);
    assert_eq!(
        estimate_tool_tokens(&[small.clone(), small.clone()]),
        2 * small_tokens
    );
    let text = serde_json::to_string(&big.parameters).unwrap();
    assert_eq!(json_len(&big.parameters), text.len());
}

#[test]
fn over_budget_is_strictly_above_the_budget() {
    let msgs = history(2);
    let tools = [tool_def(serde_json::json!({"type": "object"}))];
    let tokens = estimate_tokens(&msgs, &tools);
    assert!(!ContextGuard::new(tokens).over_budget(&msgs, &tools));
    assert!(ContextGuard::new(tokens - 1).over_budget(&msgs, &tools));
    let tool_tokens = estimate_tool_tokens(&tools);
    assert!(!ContextGuard::new(tokens).over_budget_with_tool_tokens(&msgs, tool_tokens));
    assert!(ContextGuard::new(tokens - 1).over_budget_with_tool_tokens(&msgs, tool_tokens));
}

#[test]
fn budget_defaults_to_window_minus_output() {
    let llm = ScriptedLlm::native().with_context(8_000, 1_000);
    assert_eq!(ContextGuard::for_llm(&llm).budget_tokens, 7_000);
}

#[test]
fn well_formedness_checks_both_directions_of_the_pairing() {
    let a = Message::assistant_tool_calls("", vec![call("1"), call("2")]);
    let ok = vec![
        Message::user("q"),
        a.clone(),
        Message::tool("2", "r2"),
        Message::tool("1", "r1"),
        Message::user("next"),
    ];
    assert!(is_well_formed(&ok));
    assert!(!is_well_formed(&ok[2..]), "orphan tool result");
    assert!(!is_well_formed(&ok[..3]), "a call without its result");
    let interleaved = vec![
        a.clone(),
        Message::tool("1", "r1"),
        Message::user("x"),
        Message::tool("2", "r2"),
    ];
    assert!(!is_well_formed(&interleaved));
    let wrong_id = vec![
        a.clone(),
        Message::tool("1", "r1"),
        Message::tool("3", "r3"),
    ];
    assert!(!is_well_formed(&wrong_id));
    let mut no_id = Message::tool("1", "r1");
    no_id.tool_call_id = None;
    assert!(!is_well_formed(&[
        Message::assistant_tool_calls("", vec![call("1")]),
        no_id
    ]));
    assert!(is_well_formed(&history(4)));
}

#[tokio::test]
async fn compaction_summarises_once_with_the_hint_and_keeps_what_must_stay() {
    let input = history(4);
    let tools = [tool_def(serde_json::json!({"type": "object"}))];
    let guard = ContextGuard::new(1_000).with_keep_recent(3);
    assert!(guard.over_budget(&input, &tools));
    let llm = ScriptedLlm::native();
    llm.text("SUMMARY-TEXT");

    let c = guard.compact(&llm, &input, &tools).await;

    let requests = llm.chat_requests();
    assert_eq!(requests.len(), 1, "exactly one summary call");
    assert!(requests[0].tools.is_empty());
    assert!(requests[0]
        .messages
        .iter()
        .all(|m| matches!(m.role, Role::System | Role::User)));
    let prompt: String = requests[0]
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert!(prompt.contains(REASONING_HINT));
    assert!(
        prompt.contains("FACT-a0") && prompt.contains("FACT-b2"),
        "old content"
    );
    assert!(
        prompt.contains("lookup({\"key\":\"a1\"})"),
        "tool calls as name(args)"
    );
    assert!(
        prompt.contains("Latest reasoning chain:\nthinking 2"),
        "the chain to keep"
    );
    assert!(!prompt.contains("FACT-a3"), "the tail is not summarised");

    let out = &c.messages;
    assert_eq!(out[0], input[0]);
    assert_eq!(out[1], input[1]);
    assert_eq!(out[2].content, "[USER INTERRUPT]\n- also check c");
    assert!(out[2].pinned);
    assert_eq!(
        out[3].content,
        "[Context summary of 9 earlier messages]\nSUMMARY-TEXT"
    );
    assert_eq!(out[3].role, Role::User);
    assert!(!out[3].pinned);
    assert_eq!(&out[4..], &input[input.len() - 3..]);
    assert!(is_well_formed(out));

    assert_eq!(
        c.usage,
        Usage::call(SCRIPTED_PROMPT_TOKENS, SCRIPTED_COMPLETION_TOKENS)
    );
    assert_eq!(c.event.summary, "SUMMARY-TEXT");
    assert_eq!(c.event.messages_before, input.len());
    assert_eq!(c.event.messages_after, out.len());
    assert_eq!(c.event.tokens_before, estimate_tokens(&input, &tools));
    assert_eq!(c.event.tokens_after, estimate_tokens(out, &tools));
    assert!(c.event.tokens_before > c.event.tokens_after);
    assert!(c.event.messages_before > c.event.messages_after);
    assert!(!guard.over_budget(out, &tools));
}

#[tokio::test]
async fn no_tail_boundary_orphans_a_tool_result() {
    let input = history(4);
    for keep in 1..=10 {
        let guard = ContextGuard::new(estimate_tokens(&input, &[]) - 1).with_keep_recent(keep);
        let llm = ScriptedLlm::native();
        llm.text(&format!("summary {keep}"));
        let c = guard.compact(&llm, &input, &[]).await;
        let out = &c.messages;
        assert!(is_well_formed(out), "keep_recent {keep}: {out:#?}");
        assert_eq!(out[0], input[0]);
        let s = summary_index(out).expect("an old part exists for every keep_recent <= 10");
        let tail = &out[s + 1..];
        assert!(
            tail.len() >= keep && tail.len() <= keep + 2,
            "keep_recent {keep}"
        );
        assert_ne!(tail[0].role, Role::Tool);
        assert_eq!(
            tail,
            &input[input.len() - tail.len()..],
            "tail kept verbatim"
        );
        for pinned in input.iter().filter(|m| m.pinned) {
            assert!(out.contains(pinned), "keep_recent {keep}: pinned lost");
        }
        let kept_old = out[1..s].len();
        let n = input.len() - 1 - kept_old - tail.len();
        assert!(out[s]
            .content
            .starts_with(&format!("[Context summary of {n} earlier messages]")));
        assert_eq!(llm.chat_requests().len(), 1);
    }
    // keep_recent 0: everything but the system prompt and pinned messages is summarised.
    let llm = ScriptedLlm::native();
    llm.text("all");
    let guard = ContextGuard::new(100).with_keep_recent(0);
    let c = guard.compact(&llm, &input, &[]).await;
    assert_eq!(c.messages.len(), 4);
    assert!(c.messages[3]
        .content
        .starts_with("[Context summary of 12 earlier messages]"));
    assert!(is_well_formed(&c.messages));
}

#[tokio::test]
async fn failed_or_empty_summary_falls_back_to_truncation() {
    let input = history(4);
    let guard = ContextGuard::new(1_000).with_keep_recent(3);
    let failing = ScriptedLlm::native();
    failing.push(Turn::Fail(LlmError::Timeout(30)));
    let c = guard.compact(&failing, &input, &[]).await;
    let note = "[9 earlier messages were removed to fit the context window]";
    assert_eq!(c.event.summary, note);
    assert_eq!(c.usage, Usage::default());
    assert_eq!(c.messages[3].content, note);
    assert_eq!(c.messages.len(), 7);
    assert!(c.messages[1].pinned && c.messages[2].pinned);
    assert!(is_well_formed(&c.messages));

    let empty = ScriptedLlm::native();
    empty.text("  \n ");
    let c = guard.compact(&empty, &input, &[]).await;
    assert_eq!(c.event.summary, note);
    assert_eq!(c.usage.llm_calls, 1, "the empty call still cost tokens");
    assert!(is_well_formed(&c.messages));
}

#[tokio::test]
async fn huge_single_tool_result_is_shrunk_below_budget_without_a_summary_call() {
    let input = vec![
        Message::system("You are an agent."),
        Message::user("QUERY").pinned(),
        Message::assistant_tool_calls("", vec![call("c1")]),
        Message::tool("c1", "é".repeat(100_000)),
    ];
    let guard = ContextGuard::new(2_000);
    let llm = ScriptedLlm::native();
    let c = guard.compact(&llm, &input, &[]).await;
    assert!(llm.chat_requests().is_empty(), "nothing old to summarise");
    assert_eq!(c.messages.len(), 4);
    assert_eq!(&c.messages[..3], &input[..3]);
    assert!(c.messages[3].content.ends_with(TRUNCATION_MARKER));
    assert!(!guard.over_budget(&c.messages, &[]));
    assert!(c.event.tokens_after <= 2_000 && c.event.tokens_before > 2_000);
    assert!(c.event.summary.contains("truncated"));
    assert!(is_well_formed(&c.messages));
}

#[tokio::test]
async fn shrinking_never_cuts_system_or_pinned_messages() {
    let big = "y".repeat(20_000);
    let input = vec![
        Message::system(big.clone()),
        Message::user(big.clone()).pinned(),
        Message::assistant_tool_calls("", vec![call("c1")]),
        Message::tool("c1", big.clone()),
        Message::assistant(big.clone()),
    ];
    let c = ContextGuard::new(1_000)
        .compact(&ScriptedLlm::native(), &input, &[])
        .await;
    assert_eq!(&c.messages[..3], &input[..3]);
    // Both cuttable messages went down to the floor; the budget cannot be met.
    for m in &c.messages[3..] {
        assert_eq!(m.content.len(), MIN_KEPT_BYTES + TRUNCATION_MARKER.len());
    }
    assert!(c.event.tokens_after < c.event.tokens_before);
}

#[tokio::test]
async fn forced_compaction_under_budget_still_shrinks() {
    let input = vec![
        Message::system("s"),
        Message::user("QUERY").pinned(),
        Message::assistant_tool_calls("", vec![call("c1")]),
        Message::tool("c1", "z".repeat(40_000)),
    ];
    let guard = ContextGuard::new(1_000_000);
    assert!(!guard.over_budget(&input, &[]));
    let c = guard.compact(&ScriptedLlm::native(), &input, &[]).await;
    assert!(c.event.tokens_after < c.event.tokens_before);
    assert!(c.event.tokens_after <= c.event.tokens_before * 3 / 4);

    // Nothing cuttable: the history comes back unchanged, and says so.
    let small = &input[..3];
    let c = guard.compact(&ScriptedLlm::native(), small, &[]).await;
    assert_eq!(c.messages, small);
    assert_eq!(c.event.summary, "");
}

#[tokio::test]
async fn a_pinned_message_inside_a_tool_pair_keeps_the_whole_pair() {
    let mut input = history(3);
    // Round 0's first tool result is pinned: its assistant and sibling result must stay.
    input[3].pinned = true;
    let guard = ContextGuard::new(1_100).with_keep_recent(3);
    let llm = ScriptedLlm::native();
    llm.text("S");
    let c = guard.compact(&llm, &input, &[]).await;
    assert!(is_well_formed(&c.messages));
    assert_eq!(&c.messages[2..5], &input[2..5]);
    assert!(c.messages.contains(&input[3]));
}

#[tokio::test]
async fn a_very_long_old_part_cannot_overflow_the_summary_call() {
    let mut input = history(30);
    // Multibyte content so the middle cut has to find char boundaries.
    input[3].content = "é".repeat(3_000);
    let llm = ScriptedLlm::native().with_context(4_000, 1_000);
    llm.text("S");
    let guard = ContextGuard::for_llm(&llm).with_keep_recent(3);
    let c = guard.compact(&llm, &input, &[]).await;
    let prompt: String = llm.chat_requests()[0]
        .messages
        .iter()
        .map(|m| m.content.clone())
        .collect();
    let max_transcript = 3_000 * 3;
    assert!(
        prompt.len() < max_transcript + 2 * SUMMARY_MESSAGE_BYTES,
        "{}",
        prompt.len()
    );
    assert!(prompt.contains("bytes of the transcript omitted"));
    assert!(
        prompt.contains("ééé") && prompt.contains("FACT-a0"),
        "the start is kept"
    );
    assert!(prompt.contains("FACT-a28"), "the end is kept");
    assert!(prompt.contains("Latest reasoning chain:\nthinking 28"));
    assert!(is_well_formed(&c.messages));
}

mod images;
