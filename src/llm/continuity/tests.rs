use serde_json::{json, Map, Value};

use super::Continuity;

fn map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[test]
fn nothing_received_is_no_continuity() {
    assert_eq!(
        Continuity::of("m", Map::new(), vec![Map::new(), Map::new()]),
        None
    );
}

#[test]
fn trailing_calls_without_fields_are_not_kept() {
    let extra = map(json!({"extra_content": {"google": {"thought_signature": "sig"}}}));
    let c =
        Continuity::of("m", Map::new(), vec![Map::new(), extra.clone(), Map::new()]).expect("kept");
    assert_eq!(c.tool_calls, vec![Map::new(), extra.clone()]);
    assert_eq!(
        (c.call(0), c.call(1), c.call(2)),
        (None, Some(&extra), None)
    );
}

#[test]
fn it_round_trips_through_json_without_empty_parts() {
    let c = Continuity::of("m", map(json!({"reasoning_content": "r"})), vec![]).expect("kept");
    let text = serde_json::to_string(&c).expect("serialises");
    assert_eq!(text, r#"{"model":"m","message":{"reasoning_content":"r"}}"#);
    assert_eq!(serde_json::from_str::<Continuity>(&text).ok(), Some(c));
}
