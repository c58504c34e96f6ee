use serde_json::{json, Value};

use super::*;

fn nested(levels: usize) -> Value {
    let mut v = json!({"type": "string"});
    for _ in 0..levels {
        v = json!({"type": "object", "properties": {"x": v}});
    }
    v
}

fn replaced(v: Verdict) -> Value {
    match v {
        Verdict::Replace(bytes) => serde_json::from_slice(&bytes).unwrap(),
        other => panic!("expected a replacement, got {other:?}"),
    }
}

#[test]
fn a_good_line_passes_untouched() {
    let line = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}).to_string();
    assert_eq!(inspect(line.as_bytes()), Verdict::Pass);
}

#[test]
fn an_answer_that_is_not_utf8_or_not_json_is_an_error_for_its_id() {
    let mut line = br#"{"jsonrpc":"2.0","id":7,"result":{"text":""#.to_vec();
    line.extend_from_slice(b"\xff\xfe\"}}");
    let e = replaced(inspect(&line));
    assert_eq!(e["id"], 7);
    assert!(e["error"]["message"].as_str().unwrap().contains("UTF-8"));
    assert_eq!(e["error"]["data"]["reagent"], UNREADABLE);
    let e = replaced(inspect(br#"{"jsonrpc": "2.0", "id": "a-1", "result": "#));
    assert_eq!(e["id"], "a-1");
    assert!(e["error"]["message"].as_str().unwrap().contains("JSON"));
    // A request or notification of the server's, or no id at all: nothing to answer.
    assert!(matches!(
        inspect(b"{\"method\":\"x\",\"id\":3,\"params\":\xff}"),
        Verdict::Drop(_)
    ));
    assert!(matches!(inspect(b"this is not json"), Verdict::Drop(_)));
}

#[test]
fn only_the_tools_nested_too_deep_are_marked_in_a_tool_list() {
    let line = json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [
        {"name": "ok", "inputSchema": nested(3)},
        {"name": "deep", "inputSchema": nested(300)},
    ]}})
    .to_string();
    let v = replaced(inspect(line.as_bytes()));
    let tools = v["result"]["tools"].as_array().unwrap();
    assert_eq!(tools[0]["inputSchema"], nested(3));
    assert!(!has_too_deep(&tools[0]));
    assert_eq!(tools[1]["name"], "deep");
    assert!(has_too_deep(&tools[1]["inputSchema"]));
}

#[test]
fn any_other_answer_nested_too_deep_is_an_error() {
    let line = json!({"jsonrpc": "2.0", "id": 4, "result": {"structuredContent": nested(300)}});
    let e = replaced(inspect(line.to_string().as_bytes()));
    assert_eq!(e["id"], 4);
    assert!(e["error"]["message"]
        .as_str()
        .unwrap()
        .contains("deeper than 100"));
}

#[test]
fn pruning_is_a_scan_that_survives_absurd_depths() {
    let deep = format!("{}{}", "[".repeat(1_000_000), "]".repeat(1_000_000));
    let pruned = prune(deep.as_bytes(), 2, usize::MAX).unwrap();
    let v: Value = serde_json::from_slice(&pruned).unwrap();
    assert_eq!(v, json!([[TOO_DEEP]]));
    assert!(!deeper_than(b"[[]]", 2) && deeper_than(b"[[[]]]", 2));
    assert!(!deeper_than(br#"[["[[[\"[["]]"#, 2));
    let strings = br#"{"a":"{[\"]","b":[[1]]}"#;
    let v: Value = serde_json::from_slice(&prune(strings, 1, usize::MAX).unwrap()).unwrap();
    assert_eq!(v, json!({"a": "{[\"]", "b": TOO_DEEP}));
    // Many tiny parts past the limit would grow the line: bounded.
    let tiny = format!("[{}[]]", "[],".repeat(1000));
    assert!(prune(tiny.as_bytes(), 1, 10_000).is_none());
}

#[test]
fn the_id_is_found_in_pieces_wherever_it_is() {
    let text =
        br#"{"jsonrpc":"2.0","result":{"id":99,"content":[{"text":"xx, }"}]},"id" : "r-5" }"#;
    let mut s = IdScanner::default();
    for piece in text.chunks(3) {
        s.feed(piece);
    }
    assert_eq!(s.answer_id(), Some(json!("r-5")));
    let mut s = IdScanner::default();
    s.feed(br#"{"id": 12, "result": {"content": "#);
    s.feed(&vec![b'z'; 100_000]);
    assert_eq!(s.answer_id(), Some(json!(12)));
    let mut s = IdScanner::default();
    s.feed(br#"{"id": 1, "method": "sampling/createMessage", "params": "#);
    assert_eq!(s.answer_id(), None);
}
