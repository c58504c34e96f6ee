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
    // No result to give: the call still never stands as the answer (the eval's c20 in native
    // mode, a fenced call of a tool that does not exist).
    let c20 =
        "```json\n{\n  \"name\": \"everything__get-area\",\n  \"arguments\": {\"a\": 37.5}\n}\n```";
    assert_eq!(clean_draft(c20, &[]), NO_RESULT);
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

#[test]
fn the_newest_new_result_comes_first() {
    let mut steps = vec![
        step("calculator", "2400.1519"),
        step("word_count", "5"),
        step("days_between", "1364"),
        step("calculator", "2400.1519"),
    ];
    assert_eq!(
        observation_answer(&steps).unwrap(),
        "Here is what the tools returned:\n- days_between: 1364\n- word_count: 5\n- calculator: 2400.1519"
    );
    // A poll whose result changed is new again; the oldest result beyond three drops out.
    steps.push(step("word_count", "6"));
    steps.push(step("status", "done"));
    assert_eq!(
        observation_answer(&steps).unwrap(),
        "Here is what the tools returned:\n- status: done\n- word_count: 6\n- days_between: 1364"
    );
}

#[test]
fn schema_keys_and_a_trailing_object_do_not_hide_a_dump() {
    // Issue 52: the schema's keys copied into the call, and a call before an object that is no
    // call; prose after a call, and a tool's definition, stay answers.
    let copy = r#"{"name": "convert_units", "arguments": {"value": 5, "from": "km", "to": "mi"}, "required": ["value", "from", "to"], "title": "convert_unitsArguments", "type": "object"}"#;
    assert!(is_call_dump(copy));
    assert!(is_call_dump(&format!("```json\n{copy}\n```")));
    assert!(is_call_dump(
        r#"{"name": "word_countArguments", "arguments": {"text": "a b"}, "title": "word_countArguments"}"#
    ));
    assert!(is_call_dump(&format!("{copy}\n{{\"note\": \"then\"}}")));
    assert!(is_call_dump(
        "{\"type\": \"tool_call\", \"tool_name\": \"c\", \"tool_args\": {}}\n{\"x\": 1}"
    ));
    assert!(!is_call_dump(&format!("{copy}\nThat converts 5 km.")));
    let definition = r#"{"name": "convert_units", "description": "Converts", "parameters": {"type": "object", "properties": {"value": {"type": "number"}}}}"#;
    assert!(!is_call_dump(definition));
}
