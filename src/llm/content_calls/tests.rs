use serde_json::{json, Value};

use super::parse_content_calls;

fn known(name: &str) -> bool {
    matches!(name, "calculator" | "current_time")
}

/// The recovered calls as `(name, arguments)`, or `None` when the content stays text.
fn parse(content: &str) -> Option<Vec<(String, Value)>> {
    parse_content_calls(content, known).map(|calls| {
        calls
            .into_iter()
            .map(|c| {
                assert!(c.id.is_empty(), "ids are the loop's to generate");
                let args = serde_json::from_str(&c.arguments).expect("arguments are JSON");
                (c.name, args)
            })
            .collect()
    })
}

fn calc(expr: &str) -> (String, Value) {
    ("calculator".to_string(), json!({ "expression": expr }))
}

#[test]
fn bare_object_with_object_arguments() {
    // The reply Qwen2.5-Coder-0.5B gives under llama.cpp --jinja (issue 22).
    let c = r#"{"name": "calculator", "arguments": {"expression": "1234 * 5678"}}"#;
    assert_eq!(parse(c), Some(vec![calc("1234 * 5678")]));
}

#[test]
fn bare_object_with_string_arguments_or_parameters() {
    let c = r#"{"name": "calculator", "arguments": "{\"expression\": \"2+2\"}"}"#;
    assert_eq!(parse(c), Some(vec![calc("2+2")]));
    let c = r#"{"name": "calculator", "parameters": {"expression": "3"}}"#;
    assert_eq!(parse(c), Some(vec![calc("3")]));
    let c = r#"{"name": "current_time", "arguments": ""}"#;
    assert_eq!(parse(c), Some(vec![("current_time".into(), json!({}))]));
}

#[test]
fn openai_function_wrapper() {
    let c = r#"{"type": "function", "id": "x", "function": {"name": "calculator", "arguments": "{\"expression\": \"1\"}"}}"#;
    assert_eq!(parse(c), Some(vec![calc("1")]));
}

#[test]
fn list_of_calls_in_order() {
    let c = r#"[{"name": "calculator", "arguments": {"expression": "1"}},
               {"name": "current_time", "arguments": {}}]"#;
    assert_eq!(
        parse(c),
        Some(vec![calc("1"), ("current_time".into(), json!({}))])
    );
}

#[test]
fn tool_calls_object() {
    let c = r#"{"tool_calls": [{"name": "calculator", "arguments": {"expression": "5"}}]}"#;
    assert_eq!(parse(c), Some(vec![calc("5")]));
    let c = r#"{"role": "assistant", "content": "", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "calculator", "arguments": "{\"expression\":\"6\"}"}}]}"#;
    assert_eq!(parse(c), Some(vec![calc("6")]));
}

#[test]
fn hermes_blocks_one_several_and_unclosed() {
    let c = "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"7\"}}\n</tool_call>";
    assert_eq!(parse(c), Some(vec![calc("7")]));
    let c = "<tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1\"}}</tool_call>\n\
             <tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2\"}}</tool_call>";
    assert_eq!(parse(c), Some(vec![calc("1"), calc("2")]));
    let c = "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"8\"}}";
    assert_eq!(parse(c), Some(vec![calc("8")]));
}

#[test]
fn mistral_json_and_args_forms() {
    let c = r#"[TOOL_CALLS] [{"name": "calculator", "arguments": {"expression": "9"}}]"#;
    assert_eq!(parse(c), Some(vec![calc("9")]));
    let c = r#"[TOOL_CALLS]calculator[ARGS]{"expression": "10"}"#;
    assert_eq!(parse(c), Some(vec![calc("10")]));
    let c = r#"[TOOL_CALLS]calculator[ARGS]{"expression": "1"}[TOOL_CALLS]current_time[ARGS]{}"#;
    assert_eq!(
        parse(c),
        Some(vec![calc("1"), ("current_time".into(), json!({}))])
    );
}

#[test]
fn a_fence_that_is_the_whole_content() {
    let c = "```json\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"11\"}}\n```";
    assert_eq!(parse(c), Some(vec![calc("11")]));
    let c = "  ```\n<tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"12\"}}</tool_call>\n```  ";
    assert_eq!(parse(c), Some(vec![calc("12")]));
}

#[test]
fn json_naming_an_unknown_tool_stays_text() {
    assert_eq!(
        parse(r#"{"name": "web_search", "arguments": {"q": "x"}}"#),
        None
    );
    // The first call naming no tool of the run: nothing is recovered.
    let c = r#"[{"name": "nope", "arguments": {}},
               {"name": "calculator", "arguments": {"expression": "1"}}]"#;
    assert_eq!(parse(c), None);
    assert_eq!(
        parse("<tool_call>{\"name\": \"nope\", \"arguments\": {}}</tool_call>"),
        None
    );
    assert_eq!(parse("[TOOL_CALLS]nope[ARGS]{}"), None);
}

#[test]
fn json_inside_prose_stays_text() {
    let c = r#"I will call {"name": "calculator", "arguments": {"expression": "1"}} now."#;
    assert_eq!(parse(c), None);
    let c = "<tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1\"}}</tool_call> The answer is 1.";
    assert_eq!(parse(c), None);
    // A fence after a sentence that explains, or followed by more text, is a code sample.
    let c = "Here is how you would ask the calculator for it yourself:\n```json\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1\"}}\n```";
    assert_eq!(parse(c), None);
    let c = "Sure:\n```json\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1\"}}\n```\nThis gives 1.";
    assert_eq!(parse(c), None);
}

#[test]
fn a_code_sample_containing_name_stays_text() {
    let c = "```python\nperson = {\"name\": \"calculator\", \"arguments\": {}}\nprint(person)\n```";
    assert_eq!(parse(c), None);
    let c = "```json\n{\"name\": \"calculator\", \"arguments\": {}}\n```\nand\n```json\n{}\n```";
    assert_eq!(parse(c), None);
}

#[test]
fn objects_that_are_answers_stay_text() {
    // A name with other keys, no arguments, arguments that are not an object, or empty lists.
    for c in [
        r#"{"name": "calculator", "version": "1.0", "arguments": {}}"#,
        r#"{"name": "calculator"}"#,
        r#"{"name": "calculator", "arguments": [1, 2]}"#,
        r#"{"name": "calculator", "arguments": "not json"}"#,
        r#"{"name": 3, "arguments": {}}"#,
        r#"{"answer": "42"}"#,
        r#"[]"#,
        r#"{"tool_calls": []}"#,
        r#"{"tool_calls": [{"name": "calculator", "arguments": {}}], "content": "hi"}"#,
        r#""calculator""#,
        "42",
        "",
        "The answer is 7006652.",
        "[TOOL_CALLS]",
        "[TOOL_CALLS] not json",
        "<tool_call>not json</tool_call>",
    ] {
        assert_eq!(parse(c), None, "{c:?} must stay text");
    }
}

const TIME: &str = r#"{"name": "current_time", "arguments": {"timezone": "Asia/Tokyo"}}"#;

fn time() -> (String, Value) {
    (
        "current_time".to_string(),
        json!({ "timezone": "Asia/Tokyo" }),
    )
}

fn calc_call(expr: &str) -> String {
    format!(r#"{{"name": "calculator", "arguments": {{"expression": "{expr}"}}}}"#)
}

#[test]
fn json_lines_of_calls() {
    // The reply issue 45 logged from Qwen2.5-Coder-0.5B: one call per line.
    let c = format!("{}\n{TIME}\n", calc_call("17 * 23"));
    assert_eq!(parse(&c), Some(vec![calc("17 * 23"), time()]));
    let c = format!("```json\n{}\n{TIME}\n```", calc_call("1"));
    assert_eq!(parse(&c), Some(vec![calc("1"), time()]));
}

#[test]
fn calls_run_together() {
    let c = format!("{}{TIME}", calc_call("1"));
    assert_eq!(parse(&c), Some(vec![calc("1"), time()]));
    let c = format!("{}  {}\t{TIME}", calc_call("1"), calc_call("2"));
    assert_eq!(parse(&c), Some(vec![calc("1"), calc("2"), time()]));
}

#[test]
fn a_reply_cut_off_after_complete_calls_runs_the_complete_ones() {
    let c = format!(
        "{}\n{}\n{{\"name\": \"calcu",
        calc_call("1"),
        calc_call("2")
    );
    assert_eq!(parse(&c), Some(vec![calc("1"), calc("2")]));
    let c = format!(
        "{}{{\"name\": \"current_time\", \"arguments\": {{\"tim",
        calc_call("3")
    );
    assert_eq!(parse(&c), Some(vec![calc("3")]));
    // A fence the cap cut before it closed.
    let c = format!("```json\n{}\n{{\"name\"", calc_call("4"));
    assert_eq!(parse(&c), Some(vec![calc("4")]));
}

#[test]
fn one_fenced_call_after_a_short_preamble() {
    let c = format!("Markdown:\n```json\n{}\n```", calc_call("6 * 7"));
    assert_eq!(parse(&c), Some(vec![calc("6 * 7")]));
    let c = format!("Sure:\n```json\n{TIME}\n```");
    assert_eq!(parse(&c), Some(vec![time()]));
    let c = format!("Here is the call:\n```\n{}\n```", calc_call("2"));
    assert_eq!(parse(&c), Some(vec![calc("2")]));
}

#[test]
fn near_misses_of_the_new_shapes_stay_text() {
    for c in [
        // Prose after calls, or prose before them without a fence.
        format!("{}\nThe answer is 391.", calc_call("17 * 23")),
        format!("I would call {}\n{TIME}", calc_call("1")),
        // An unknown name on the first line spoils the reply.
        format!(
            "{{\"name\": \"web_search\", \"arguments\": {{}}}}\n{}",
            calc_call("1")
        ),
        // Only a cut-off call: nothing complete to run.
        "{\"name\": \"calculator\", \"arguments\": {\"expr".to_string(),
        // A cut-off tail that is not JSON.
        format!("{}\nand then", calc_call("1")),
        // Values that are not calls, one per line.
        "42\n43".to_string(),
        format!("{{\"answer\": 1}}\n{}", calc_call("1")),
        // A long preamble is an explanation; two fences are code samples.
        format!(
            "To compute this you would write the following request:\n```json\n{}\n```",
            calc_call("1")
        ),
        format!(
            "Sure:\n```json\n{}\n```\n```json\n{TIME}\n```",
            calc_call("1")
        ),
        "Sure:\n```json\n{\"name\": \"nope\", \"arguments\": {}}\n```".to_string(),
    ] {
        assert_eq!(parse(&c), None, "{c:?} must stay text");
    }
}

/// The reply Qwen2.5-Coder-0.5B wrote most often in the eval (issue 52): the call object with the
/// keys of its tool's schema copied beside the name and the arguments.
const SCHEMA_COPY: &str = r#"{"name": "calculator", "arguments": {"expression": "17 * 23"}, "required": ["expression"], "title": "calculatorArguments", "type": "object"}"#;

#[test]
fn schema_keys_copied_into_the_call_object_are_ignored() {
    assert_eq!(parse(SCHEMA_COPY), Some(vec![calc("17 * 23")]));
    let c = r#"{"name": "current_time", "parameters": {"timezone": "Asia/Tokyo"}, "properties": {"timezone": {"type": "string"}}, "description": "The time"}"#;
    assert_eq!(parse(c), Some(vec![time()]));
    let c = format!("```json\n{SCHEMA_COPY}\n{TIME}\n```");
    assert_eq!(parse(&c), Some(vec![calc("17 * 23"), time()]));
}

#[test]
fn a_tool_definition_is_not_a_call() {
    let schema = r#"{"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}"#;
    for c in [
        format!(r#"{{"name": "calculator", "description": "Evaluates", "parameters": {schema}}}"#),
        format!(
            r#"{{"type": "function", "function": {{"name": "calculator", "description": "Evaluates", "parameters": {schema}}}}}"#
        ),
    ] {
        assert_eq!(parse(&c), None, "{c}");
    }
}

#[test]
fn a_schema_title_as_the_name_is_recovered_when_it_names_a_tool() {
    let tools = ["calculator", "current_time"];
    let resolves = |n: &str| crate::tools::names::resolve(&tools, n).is_some();
    let c = r#"{"name": "calculatorArguments", "arguments": {"expression": "2"}, "title": "calculatorArguments", "type": "object"}"#;
    let calls = parse_content_calls(c, resolves).expect("recovered");
    assert_eq!(calls[0].name, "calculatorArguments");
    let c = r#"{"name": "web_searchArguments", "arguments": {}}"#;
    assert!(parse_content_calls(c, resolves).is_none());
}

#[test]
fn calls_are_recovered_up_to_the_first_unreadable_object() {
    let one = Some(vec![calc("1")]);
    for c in [
        // An object that is no call, a call to no tool of the run, a malformed object.
        format!("{}\n{{\"answer\": 1}}\n{TIME}", calc_call("1")),
        format!(
            "{}\n{{\"name\": \"web_search\", \"arguments\": {{}}}}\n{TIME}",
            calc_call("1")
        ),
        format!("{}\n{{\"name\": \"calculator\", \"arguments\": {{\"x\" 1}}}}\n{TIME}", calc_call("1")),
        format!("{}}}\n{TIME}", calc_call("1")),
        format!("{}\n{{\"name\": \"calculator\", \"version\": 2, \"arguments\": {{}}}}", calc_call("1")),
        // In a list, in Hermes blocks and in Mistral's pairs.
        format!(r#"[{}, {{"name": "nope", "arguments": {{}}}}, {TIME}]"#, calc_call("1")),
        format!(
            "<tool_call>{}</tool_call>\n<tool_call>{{oops</tool_call>\n<tool_call>{TIME}</tool_call>",
            calc_call("1")
        ),
        "[TOOL_CALLS]calculator[ARGS]{\"expression\": \"1\"}[TOOL_CALLS]nope[ARGS]{}[TOOL_CALLS]current_time[ARGS]{}".to_string(),
    ] {
        assert_eq!(parse(&c), one, "{c}");
    }
}
