use serde_json::{json, Value};

use super::{parse_action, Action, ActionCall};
use crate::llm::ToolDefinition;

fn tools() -> Vec<ToolDefinition> {
    let def = |name: &str, params: Value| ToolDefinition {
        name: name.into(),
        description: String::new(),
        parameters: params,
    };
    vec![
        def(
            "calculator",
            json!({"type": "object", "properties": {"expression": {"type": "string"}}}),
        ),
        def(
            "http_request",
            json!({"type": "object", "properties": {"url": {}, "method": {}}}),
        ),
    ]
}

fn parse(content: &str) -> Option<Action> {
    parse_action(content, &tools())
}

fn call(name: &str, args: Value) -> (String, Value) {
    (name.to_string(), args)
}

/// The `(tool, arguments)` of a tool-call action with one call; panics on anything else.
fn tool_call(content: &str) -> (String, Value) {
    match tool_calls(content).as_slice() {
        [one] => one.clone(),
        other => panic!("{content:?} parsed as {other:?}, not one call"),
    }
}

/// The `(tool, arguments)` of each call of a tool-call action; panics on anything else.
fn tool_calls(content: &str) -> Vec<(String, Value)> {
    match parse(content) {
        Some(Action::ToolCall { calls, .. }) => calls
            .into_iter()
            .map(
                |ActionCall {
                     tool_name,
                     tool_args,
                 }| (tool_name, tool_args),
            )
            .collect(),
        other => panic!("{content:?} parsed as {other:?}, not a tool call"),
    }
}

fn final_answer(content: &str) -> String {
    match parse(content) {
        Some(Action::FinalAnswer { answer, .. }) => answer,
        other => panic!("{content:?} parsed as {other:?}, not a final answer"),
    }
}

#[test]
fn an_answer_copying_the_observation_label_loses_it() {
    let c = r#"{"type": "final_answer", "answer": "Observation: 391"}"#;
    assert_eq!(final_answer(c), "391");
    let c = r#"{"type": "final_answer", "answer": " Observation:\nThe sum is 12."}"#;
    assert_eq!(final_answer(c), "The sum is 12.");
    let c = r#"{"type": "final_answer", "answer": "Observatory hours: 9-5"}"#;
    assert_eq!(
        final_answer(c),
        "Observatory hours: 9-5",
        "only the whole label"
    );
    let c = r#"{"type": "final_answer", "answer": "Noted. Observation: 3"}"#;
    assert_eq!(
        final_answer(c),
        "Noted. Observation: 3",
        "only at the start"
    );
}

#[test]
fn the_canonical_shapes() {
    let c = r#"{"type": "tool_call", "reasoning": "r", "tool_name": "calculator", "tool_args": {"expression": "1"}}"#;
    assert_eq!(tool_call(c), call("calculator", json!({"expression": "1"})));
    let c = r#"{"type": "final_answer", "reasoning": "r", "answer": "42"}"#;
    assert_eq!(final_answer(c), "42");
    // An explicit tool_call keeps an unknown name: the executor answers with the tool list.
    let c = r#"{"type": "tool_call", "tool_name": "nope"}"#;
    assert_eq!(tool_call(c), call("nope", json!({})));
    assert_eq!(parse("no json here"), None);
}

#[test]
fn every_name_alias_with_every_args_alias() {
    for name_key in ["tool", "tool_name", "name", "action"] {
        for args_key in [
            "args",
            "tool_args",
            "arguments",
            "action_input",
            "parameters",
        ] {
            let c = json!({ name_key: "calculator", args_key: {"expression": "2*3"} }).to_string();
            assert_eq!(
                tool_call(&c),
                call("calculator", json!({"expression": "2*3"})),
                "{c}"
            );
        }
    }
}

#[test]
fn aliases_inside_an_explicit_tool_call() {
    let c = r#"{"type": "tool_call", "name": "calculator", "arguments": {"expression": "4"}}"#;
    assert_eq!(tool_call(c), call("calculator", json!({"expression": "4"})));
}

#[test]
fn langchain_style_actions() {
    // A JSON string of arguments, and a bare input for a one-parameter tool.
    let c = r#"{"action": "calculator", "action_input": "{\"expression\": \"5\"}"}"#;
    assert_eq!(tool_call(c), call("calculator", json!({"expression": "5"})));
    let c = r#"{"thought": "multiply", "action": "calculator", "action_input": "1234 * 5678"}"#;
    assert_eq!(
        tool_call(c),
        call("calculator", json!({"expression": "1234 * 5678"}))
    );
    match parse(c) {
        Some(Action::ToolCall { reasoning, .. }) => assert_eq!(reasoning, "multiply"),
        other => panic!("{other:?}"),
    }
    // Two parameters: a bare string cannot be placed, the tool gets `{}` and says what it needs.
    let c = r#"{"action": "http_request", "action_input": "http://x"}"#;
    assert_eq!(tool_call(c), call("http_request", json!({})));
}

#[test]
fn final_answer_aliases() {
    let c = r#"{"action": "Final Answer", "action_input": "It is 7006652."}"#;
    assert_eq!(final_answer(c), "It is 7006652.");
    let c = r#"{"action": "final_answer", "action_input": {"value": 3}}"#;
    assert_eq!(final_answer(c), r#"{"value":3}"#);
    let c = r#"{"tool": "finish", "answer": "done"}"#;
    assert_eq!(final_answer(c), "done");
}

#[test]
fn an_aliased_name_that_is_no_tool_stays_a_final_answer() {
    let c = r#"{"name": "web_search", "arguments": {"q": "x"}}"#;
    assert_eq!(final_answer(c), c);
    let c = r#"{"name": "Alice", "answer": "Alice is 30."}"#;
    assert_eq!(final_answer(c), "Alice is 30.");
    // A type we know wins over the aliases.
    let c = r#"{"type": "final_answer", "action": "calculator", "answer": "7"}"#;
    assert_eq!(final_answer(c), "7");
}

#[test]
fn aliases_in_prose_or_fences_are_found_as_before() {
    let c = "Let me compute.\n```json\n{\"tool\": \"calculator\", \"args\": {\"expression\": \"9\"}}\n```";
    assert_eq!(tool_call(c), call("calculator", json!({"expression": "9"})));
}

#[test]
fn a_code_sample_containing_name_is_an_answer() {
    let c = "Use a dict:\n```python\nperson = {\"name\": \"Bob\", \"age\": 3}\n```";
    assert_eq!(final_answer(c), c);
}

#[test]
fn an_aliased_name_that_means_one_tool_is_that_tool() {
    assert_eq!(
        tool_call(r#"{"action": "Calculator", "action_input": "2+2"}"#),
        call("calculator", json!({"expression": "2+2"}))
    );
    assert_eq!(
        tool_call(r#"{"tool": "http-request", "args": {"url": "u"}}"#),
        call("http_request", json!({"url": "u"}))
    );
}

#[test]
fn an_action_cut_off_by_the_output_cap_is_no_action() {
    // Issue 52 (c01 and m22 in JSON mode): the free-text `reasoning` ran to the output cap; the
    // object found inside the reply is the arguments, and the reply was the answer.
    let cut = r#"{"type": "tool_call", "tool_name": "calculator", "tool_args": {"expression": "1234 * 5678"}, "reasoning": "Observation: 1234 * 5678 = 70000000000"#;
    assert_eq!(parse(cut), None);
    assert_eq!(parse(&format!("```json\n{cut}")), None);
    // A whole object, or prose around one, is read as before.
    assert_eq!(final_answer(r#"{"answer": "42"}"#), "42");
    assert_eq!(
        tool_call(r#"Sure: {"type": "tool_call", "tool_name": "calculator", "tool_args": {}}"#),
        call("calculator", json!({}))
    );
}

#[test]
fn a_final_answer_cut_off_by_the_output_cap_keeps_what_it_said() {
    use super::cut_answer;
    // Issue 52 (c01 and m22 in JSON mode, `json_object`): the answer ran to the output cap
    // twice, and the cut JSON was the run's answer.
    let cut = "{\"type\": \"final_answer\", \"answer\": \"It is 7006652. \\\"Exact\\\" and 70000";
    assert_eq!(
        cut_answer(cut).as_deref(),
        Some("It is 7006652. \"Exact\" and 70000")
    );
    let pretty = "{\n  \"type\": \"final_answer\",\n  \"answer\": \"Observation: 23302\\";
    assert_eq!(
        cut_answer(pretty).as_deref(),
        Some("23302"),
        "without the loop's label"
    );
    let closed_string = r#"{"type": "final_answer", "answer": "42", "reasoning": "because"#;
    assert_eq!(cut_answer(closed_string).as_deref(), Some("42"));
    // Not a cut final answer: a whole object, a cut tool call, prose, an empty answer.
    assert_eq!(
        cut_answer(r#"{"type": "final_answer", "answer": "42"}"#),
        None
    );
    let call = r#"{"type": "tool_call", "tool_name": "calculator", "tool_args": {"expression": "1"#;
    assert_eq!(cut_answer(call), None);
    assert_eq!(cut_answer("The answer is 42"), None);
    assert_eq!(cut_answer(r#"{"type": "final_answer", "answer": " "#), None);
}

#[test]
fn a_tool_call_with_a_list_of_calls_is_each_of_them_in_order() {
    let c = r#"{"type": "tool_call", "calls": [{"tool_name": "calculator", "tool_args": {"expression": "1+1"}}, {"tool_name": "http_request", "tool_args": {"url": "u"}}]}"#;
    assert_eq!(
        tool_calls(c),
        [
            call("calculator", json!({"expression": "1+1"})),
            call("http_request", json!({"url": "u"}))
        ]
    );
    // `tool_calls` names the list too, and a call keeps its place after the action's own.
    let c = r#"{"type": "tool_call", "tool_name": "calculator", "tool_args": {"expression": "1"}, "tool_calls": [{"tool_name": "calculator", "tool_args": {"expression": "2"}}]}"#;
    assert_eq!(
        tool_calls(c),
        [
            call("calculator", json!({"expression": "1"})),
            call("calculator", json!({"expression": "2"}))
        ]
    );
}

#[test]
fn each_call_of_the_list_is_read_with_the_aliases() {
    // Another framework's call shapes, a bare input for a one-parameter tool, OpenAI's wrapper;
    // the name as written, as in a single explicit call (the executor resolves it).
    let c = r#"{"type": "tool_call", "calls": [{"name": "calculator", "arguments": "{\"expression\": \"3\"}"}, {"action": "Calculator", "action_input": "4"}, {"type": "function", "function": {"name": "http_request", "arguments": {"url": "v"}}}]}"#;
    assert_eq!(
        tool_calls(c),
        [
            call("calculator", json!({"expression": "3"})),
            call("Calculator", json!({"expression": "4"})),
            call("http_request", json!({"url": "v"}))
        ]
    );
    // Without `type`, a list is calls when it names tools of the run, as an aliased name is.
    let c = r#"{"tool_calls": [{"name": "calculator", "arguments": {"expression": "5"}}]}"#;
    assert_eq!(tool_call(c), call("calculator", json!({"expression": "5"})));
    let c = r#"{"calls": [{"name": "web_search", "arguments": {"q": "x"}}]}"#;
    assert_eq!(final_answer(c), c);
}

#[test]
fn a_bad_call_in_the_list_keeps_the_calls_before_it() {
    let c = r#"{"type": "tool_call", "calls": [{"tool_name": "calculator", "tool_args": {"expression": "1"}}, {"tool_args": {"expression": "2"}}, {"tool_name": "calculator", "tool_args": {"expression": "3"}}]}"#;
    assert_eq!(
        tool_calls(c),
        [call("calculator", json!({"expression": "1"}))]
    );
    let c = r#"{"type": "tool_call", "calls": ["calculator", {"tool_name": "calculator"}]}"#;
    assert_eq!(parse(c), None);
    assert_eq!(parse(r#"{"type": "tool_call", "calls": []}"#), None);
}
