//! The dump guard on the replies Qwen2.5-Coder-0.5B wrote in the eval (BENCHMARKS.md "Small
//! local models": c13, c17 and the newcomer's first prompt) and on answers that only look alike.

use super::*;

fn step(tool: &str, observation: &str) -> StepRecord {
    StepRecord {
        iteration: 1,
        call_id: "c1".into(),
        tool: tool.into(),
        arguments: serde_json::json!({}),
        observation: observation.into(),
        error: false,
        blocked: false,
        duration_ms: 1,
    }
}

#[test]
fn a_json_mode_action_after_a_one_word_preamble_is_a_dump() {
    // c13 and c17: the action format, fenced after `Markdown:`.
    let c13 = "Markdown:\n```json\n{\"type\": \"tool_call\", \"reasoning\": \"I need to calculate \
               the product.\", \"tool_name\": \"calculator\", \"tool_args\": {\"expression\": \
               \"(17 + 25) * 3\"}}\n```";
    let c17 =
        "Markdown: ```json {\"type\": \"tool_call\", \"tool_name\": \"everything__get-sum\", \
               \"tool_args\": {\"a\": 2345, \"b\": 3210}}```";
    assert!(is_call_dump(c13));
    assert!(is_call_dump(c17));
    assert!(is_call_dump(
        r#"{"type":"tool_call","reasoning":"","tool_name":"calculator","tool_args":{}}"#
    ));
}

#[test]
fn a_call_cut_off_by_the_output_cap_is_a_dump() {
    // The newcomer's first prompt: one fence per call, the cap cutting the first call's
    // arguments; and the bare openings the cap leaves.
    let newcomer =
        "Markdown:\n```json\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \
                    \"17 * 23\"}}\n```\n```json\n{\"name\": \"current_time\", \"arguments\": \
                    {\"timezone\": \"Asia/To";
    assert!(is_call_dump(newcomer));
    assert!(is_call_dump(
        "{\"name\": \"calculator\", \"arguments\": {\"expression\": \"17 *"
    ));
    assert!(is_call_dump("```json\n[{\"name\": \"calcul"));
    assert!(is_call_dump(
        "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"ex"
    ));
    assert!(is_call_dump(
        "{\"type\": \"tool_call\", \"reasoning\": \"First I mul"
    ));
    assert!(is_call_dump(
        "{\"type\": \"function\", \"function\": {\"name\": \"calc"
    ));
}

#[test]
fn answers_that_only_look_like_calls_stay_answers() {
    for text in [
        "The result is 391.",
        // Data with a name, cut off or whole.
        "{\"name\": \"Alice\", \"age\": 3",
        "{\"name\": \"Alice\", \"age\": 3}",
        // A final answer, and prose that quotes an action.
        "{\"type\": \"final_answer\", \"answer\": \"391\"}",
        "To call the tool, send {\"type\": \"tool_call\", \"tool_name\": \"calculator\"}.",
        "The call was:\n```json\n{\"name\": \"calculator\", \"arguments\": {}}\n```\nIt returned 391.",
        "",
    ] {
        assert!(!is_call_dump(text), "{text:?}");
    }
}

#[test]
fn a_dump_draft_gives_the_observations() {
    let steps = [step("calculator", "391")];
    let draft = "Markdown: ```json {\"type\": \"tool_call\", \"tool_name\": \"calculator\"";
    assert_eq!(
        clean_draft(draft, &steps),
        "Here is what the tools returned:\n- calculator: 391"
    );
    assert_eq!(clean_draft("It is 391.", &steps), "It is 391.");
}

#[test]
fn a_repeated_call_is_quoted_once_with_its_latest_result() {
    let mut steps = vec![step("calculator", "391"), step("current_time", "09:00")];
    for _ in 0..4 {
        steps.push(step("calculator", "391"));
    }
    steps[1].arguments = serde_json::json!({"timezone": "Asia/Tokyo"});
    assert_eq!(
        observation_answer(&steps).unwrap(),
        "Here is what the tools returned:\n- current_time: 09:00\n- calculator: 391"
    );
}
