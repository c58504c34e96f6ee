use super::*;

#[test]
fn finds_the_arithmetic_in_a_question() {
    let cases = [
        ("What is 17 * 23?", Some("17 * 23")),
        ("what is 2 ** 32", Some("2 ** 32")),
        (
            "What is 17 * 23, and what time is it in Tokyo?",
            Some("17 * 23"),
        ),
        ("Compute (1 + 2) / 3 please", Some("(1 + 2) / 3")),
        ("what is 6 times 7", Some("6 * 7")),
        ("What year is it? 2026", None),
        ("Tell me a story", None),
        ("is -5 negative", None),
    ];
    for (question, expected) in cases {
        assert_eq!(expression_in(question).as_deref(), expected, "{question}");
    }
}

fn message(role: &str, content: &str, call: Option<&str>) -> MockMessage {
    MockMessage {
        role: role.into(),
        content: Some(Value::String(content.into())),
        tool_call_id: call.map(str::to_string),
    }
}

#[test]
fn calls_the_tools_a_question_needs_then_answers_from_their_results() {
    let mut messages = vec![
        message("system", "You are an agent.", None),
        message(
            "user",
            "What is 17 * 23, and what time is it in Tokyo?",
            None,
        ),
    ];
    let Turn::Calls(calls) = loop_turn(&messages) else {
        panic!("expected tool calls");
    };
    let names: Vec<(&str, Value)> = calls.iter().map(|(_, t, a)| (*t, a.clone())).collect();
    assert_eq!(
        names,
        [
            ("calculator", json!({"expression": "17 * 23"})),
            ("current_time", json!({"timezone": "Asia/Tokyo"})),
        ]
    );
    messages.push(message("tool", "391", Some("call_demo_calculator")));
    messages.push(message(
        "tool",
        "2026-12-04T22:00:00+09:00",
        Some("call_demo_current_time"),
    ));
    let Turn::Text(answer) = loop_turn(&messages) else {
        panic!("expected the answer");
    };
    assert!(answer.starts_with("17 * 23 = **391**"), "{answer}");
    assert!(
        answer.contains("Asia/Tokyo is 2026-12-04T22:00:00+09:00"),
        "{answer}"
    );
}

#[test]
fn anything_else_gets_the_help_and_synthesis_streams_the_draft() {
    let messages = vec![message("user", "Write me a poem", None)];
    assert!(matches!(loop_turn(&messages), Turn::Text(t) if t == HELP));
    let synthesis = vec![message(
        "user",
        "Original question:\nWhat is 17 * 23?\n\nExecution trace:\n1. calculator(...)\n\nDraft answer:\n17 * 23 = **391**.\n",
        None,
    )];
    assert_eq!(streamed_text(&synthesis), "17 * 23 = **391**.");
}

#[test]
fn a_plan_is_the_question_as_one_step_and_the_router_picks_the_loop() {
    let messages = vec![message("user", "What is 2 ** 32?", None)];
    let plan = structured("create_plan", &messages).unwrap();
    assert_eq!(plan["steps"][0]["task"], "What is 2 ** 32?");
    assert_eq!(plan["steps"].as_array().unwrap().len(), 1);
    assert_eq!(
        structured("choose_engine", &messages).unwrap()["engine"],
        "react"
    );
    assert!(structured("analyse_results", &messages).is_none());
}
