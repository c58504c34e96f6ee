//! What the Responses request parser accepts and refuses.

use super::*;

fn ok(body: Value) -> Parsed {
    parse(body.to_string().as_bytes()).unwrap()
}

fn refused(body: Value) -> (u16, Option<&'static str>) {
    let e = parse(body.to_string().as_bytes()).unwrap_err();
    (e.status().as_u16(), e.param())
}

#[test]
fn a_string_input_is_the_query() {
    let p = ok(json!({"model": "helper", "input": "hi", "metadata": {"k": "v"}}));
    assert_eq!(p.query, "hi");
    assert!(p.history.is_empty() && p.system.is_empty());
    assert_eq!(
        p.echo.input[0]["content"][0],
        json!({"type": "input_text", "text": "hi"})
    );
    assert_eq!(p.echo.metadata["k"], "v");
    assert!(p.echo.store && !p.echo.background && !p.stream);
    assert_eq!(p.echo.tool_choice, "auto");
}

#[test]
fn items_give_history_and_system_text() {
    let p = ok(
        json!({"model": "helper", "instructions": "Be brief.", "input": [
            {"role": "developer", "content": "Dev note."},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"}]},
            {"role": "assistant", "content": [{"type": "output_text", "text": "b"}]},
            {"role": "system", "content": "Sys."},
            {"role": "user", "content": "c"},
        ]}),
    );
    assert_eq!(p.system, ["Be brief.", "Dev note.", "Sys."]);
    assert_eq!(p.query, "c");
    let history: Vec<(&str, MessageRole)> = p
        .history
        .iter()
        .map(|t| (t.content.as_str(), t.role))
        .collect();
    assert_eq!(
        history,
        [("a", MessageRole::User), ("b", MessageRole::Assistant)]
    );
    assert_eq!(p.echo.input.len(), 5);
}

#[test]
fn what_an_agent_cannot_follow_is_a_400_naming_the_parameter() {
    for (body, param) in [
        (json!({"input": "x"}), Some("model")),
        (json!({"model": "m"}), Some("input")),
        (json!({"model": "m", "input": []}), Some("input")),
        (
            json!({"model": "m", "input": [{"role": "assistant", "content": "x"}]}),
            Some("input"),
        ),
        (
            json!({"model": "m", "input": [{"type": "function_call_output", "call_id": "c", "output": "o"}]}),
            Some("input"),
        ),
        (
            json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_image", "detail": "auto"}]}]}),
            Some("input"),
        ),
        (
            json!({"model": "m", "input": "x", "tools": [{"type": "web_search"}]}),
            Some("tools"),
        ),
        (
            json!({"model": "m", "input": "x", "tools": [{"type": "function"}]}),
            Some("tools"),
        ),
        (
            json!({"model": "m", "input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]}),
            Some("input"),
        ),
        (
            json!({"model": "m", "input": "x", "tool_choice": "required"}),
            Some("tool_choice"),
        ),
        (
            json!({"model": "m", "input": "x", "metadata": {"k": 1}}),
            Some("metadata"),
        ),
        (
            json!({"model": "m", "input": "x", "stream": "yes"}),
            Some("stream"),
        ),
        (
            json!({"model": "m", "input": "x", "max_output_tokens": 0}),
            Some("max_output_tokens"),
        ),
        (
            json!({"model": "m", "input": "x", "previous_response_id": format!("resp_{}", Uuid::new_v4()), "conversation": Uuid::new_v4().to_string()}),
            Some("previous_response_id"),
        ),
    ] {
        assert_eq!(refused(body.clone()), (400, param), "{body}");
    }
    // A malformed response or conversation id names nothing that exists.
    assert_eq!(
        refused(json!({"model": "m", "input": "x", "previous_response_id": "resp_x"})).0,
        404
    );
    assert_eq!(
        refused(json!({"model": "m", "input": "x", "conversation": "nope"})).0,
        404
    );
}

#[test]
fn response_ids_are_resp_and_the_run_id() {
    let id = Uuid::new_v4();
    assert_eq!(response_run_id(&format!("resp_{id}")), Some(id));
    assert_eq!(response_run_id(&id.to_string()), None);
    assert_eq!(response_run_id("resp_"), None);
}

#[test]
fn function_tools_are_caller_tools_and_outputs_answer_them() {
    let p = ok(json!({"model": "m", "input": "hi", "tools": [
        {"type": "function", "name": "get_weather", "description": "Weather", "parameters": {"type": "object"}},
    ]}));
    assert_eq!(p.client_tools.len(), 1);
    assert_eq!(p.client_tools[0].name, "get_weather");
    assert_eq!(p.echo.tools[0]["name"], "get_weather");
    let previous = format!("resp_{}", Uuid::new_v4());
    let p = ok(
        json!({"model": "m", "previous_response_id": previous, "input": [
            {"type": "function_call_output", "call_id": "k1", "output": "sunny"},
        ]}),
    );
    assert_eq!(p.tool_outputs[0].call_id, "k1");
    assert_eq!(p.tool_outputs[0].output, "sunny");
    assert_eq!(p.query, "");
}

#[test]
fn input_image_parts_are_the_user_messages_images_echoed_without_their_bytes() {
    let p = ok(json!({"model": "m", "input": [{"role": "user", "content": [
        {"type": "input_text", "text": "what is this?"},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "high"},
        {"type": "input_image", "image_url": "https://e.x/a.png"},
    ]}]}));
    assert_eq!(p.query, "what is this?");
    assert_eq!(
        p.images,
        ["data:image/png;base64,AAAA", "https://e.x/a.png"]
    );
    assert_eq!(
        p.echo.input[0]["content"],
        json!([
            {"type": "input_text", "text": "what is this?"},
            {"type": "input_image", "image_url": null, "detail": "high"},
            {"type": "input_image", "image_url": "https://e.x/a.png", "detail": "auto"},
        ])
    );
    for bad in [
        json!({"type": "input_image", "image_url": "https://e.x/a.png", "detail": "huge"}),
        json!({"type": "input_image", "file_id": "file-1"}),
    ] {
        let body = json!({"model": "m", "input": [{"role": "user", "content": [bad]}]});
        assert_eq!(refused(body), (400, Some("input")));
    }
}
