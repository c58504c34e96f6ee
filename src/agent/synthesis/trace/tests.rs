use serde_json::json;

use super::*;

fn step(i: usize, observation: &str) -> StepRecord {
    StepRecord {
        iteration: 1,
        call_id: format!("c{i}"),
        tool: "lookup".into(),
        arguments: json!({"i": i}),
        observation: observation.into(),
        error: false,
        blocked: false,
        duration_ms: 1,
    }
}

fn limits(max_bytes: usize) -> TraceLimits {
    TraceLimits {
        truncation: 2000,
        max_bytes,
    }
}

#[test]
fn a_trace_that_fits_is_whole() {
    let steps: Vec<_> = (0..3).map(|i| step(i, "found it")).collect();
    let t = build_trace("q?", &steps, "draft", limits(64 * 1024));
    assert_eq!(
        t,
        "Original question:\nq?\n\nExecution trace:\n\
         1. lookup({\"i\":0})\n   Result: found it\n\
         2. lookup({\"i\":1})\n   Result: found it\n\
         3. lookup({\"i\":2})\n   Result: found it\n\
         \nDraft answer:\ndraft\n"
    );
}

#[test]
fn a_long_trace_keeps_its_first_and_last_steps_under_the_limit() {
    let steps: Vec<_> = (0..10_000).map(|i| step(i, &"r".repeat(3000))).collect();
    let t = build_trace("q?", &steps, "draft", limits(64 * 1024));
    assert!(t.len() <= 64 * 1024, "{} bytes", t.len());
    assert!(t.contains("\n1. lookup({\"i\":0})"));
    assert!(t.contains("\n10000. lookup({\"i\":9999})"));
    assert!(t.contains(" of 10000 steps left out here: the trace is limited to 65536 bytes]"));
    assert!(t.ends_with("\nDraft answer:\ndraft\n"));
}

#[test]
fn huge_arguments_a_huge_query_and_a_huge_draft_are_cut() {
    let mut s = step(0, "ok");
    s.arguments = json!({"blob": "é".repeat(5_000_000)});
    s.tool = "t".repeat(1_000_000);
    let q = "q".repeat(1_000_000);
    let t = build_trace(&q, &[s], &"d".repeat(1_000_000), limits(256 * 1024));
    assert!(t.len() <= 256 * 1024, "{} bytes", t.len());
    assert!(
        t.contains("… [truncated "),
        "the arguments say they were cut"
    );
    assert!(t.contains("[cut: 1000000 bytes in all]"));
}

#[test]
fn the_limit_is_the_smaller_of_the_setting_and_the_prompt_budget() {
    assert_eq!(trace_limit(256 * 1024, 1_000_000), 256 * 1024);
    let small = trace_limit(256 * 1024, 12_000);
    let system = estimate_message_tokens(&[Message::system(prompts::SYNTHESIS_SYSTEM)]);
    assert_eq!(
        small,
        (12_000 - system - MESSAGE_OVERHEAD_TOKENS) * BYTES_PER_TOKEN
    );
    assert_eq!(trace_limit(256 * 1024, 10), MIN_TRACE_BYTES);
}

#[test]
fn cut_bytes_stops_on_a_char_boundary() {
    assert_eq!(cut_bytes("short", 100), "short");
    let cut = cut_bytes(&"é".repeat(100), 101);
    assert!(cut.len() <= 101);
    assert!(cut.ends_with("… [cut: 200 bytes in all]"));
}

#[test]
fn the_draft_may_take_half_the_trace() {
    let draft = "d".repeat(100_000);
    let t = build_trace("q?", &[], &draft, limits(256 * 1024));
    assert!(t.contains(&draft), "a draft under half the limit is whole");
}
