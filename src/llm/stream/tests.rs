use super::*;

#[test]
fn duplicate_call_ids_are_made_unique() {
    let call = |id: &str| ToolCall {
        id: id.into(),
        name: "f".into(),
        arguments: "{}".into(),
    };
    let mut calls = vec![call("a"), call("a"), call("a_2"), call("b"), call("a")];
    dedupe_call_ids(&mut calls);
    let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["a", "a_3", "a_2", "b", "a_4"]);
}

fn d(
    index: Option<u32>,
    id: Option<&str>,
    name: Option<&str>,
    args: Option<&str>,
) -> ToolCallDelta {
    ToolCallDelta {
        index,
        id: id.map(str::to_string),
        name: name.map(str::to_string),
        arguments: args.map(str::to_string),
        extra_content: None,
    }
}

fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }
}

#[test]
fn openai_style_single_call_with_arguments_in_later_chunks() {
    let mut a = ToolCallAssembler::new();
    a.push(d(Some(0), Some("call_a"), Some("calculator"), Some("")));
    a.push(d(Some(0), None, None, Some("{\"expr")));
    a.push(d(Some(0), None, None, Some("ession\":")));
    a.push(d(Some(0), None, None, Some("\"1+1\"}")));
    assert_eq!(
        a.finish(),
        vec![call("call_a", "calculator", "{\"expression\":\"1+1\"}")]
    );
}

#[test]
fn parallel_calls_interleaved_by_index() {
    let mut a = ToolCallAssembler::new();
    a.push(d(Some(0), Some("c0"), Some("alpha"), None));
    a.push(d(Some(1), Some("c1"), Some("beta"), None));
    a.push(d(Some(1), None, None, Some("{\"b\":")));
    a.push(d(Some(0), None, None, Some("{\"a\":1}")));
    a.push(d(Some(1), None, None, Some("2}")));
    assert_eq!(
        a.finish(),
        vec![
            call("c0", "alpha", "{\"a\":1}"),
            call("c1", "beta", "{\"b\":2}")
        ]
    );
}

#[test]
fn missing_index_new_id_opens_new_call_and_no_id_appends_to_last() {
    let mut a = ToolCallAssembler::new();
    a.push(d(None, Some("x"), Some("first"), Some("{")));
    a.push(d(None, None, None, Some("}")));
    a.push(d(None, Some("y"), Some("second"), None));
    a.push(d(None, Some("y"), None, Some("{\"k\":")));
    a.push(d(None, None, None, Some("true}")));
    assert_eq!(
        a.finish(),
        vec![
            call("x", "first", "{}"),
            call("y", "second", "{\"k\":true}")
        ]
    );
}

#[test]
fn name_split_over_chunks_is_concatenated() {
    let mut a = ToolCallAssembler::new();
    a.push(d(Some(0), Some("id"), Some("current_"), None));
    a.push(d(Some(0), None, Some("time"), None));
    a.push(d(Some(0), None, None, Some("{}")));
    assert_eq!(a.finish(), vec![call("id", "current_time", "{}")]);
}

#[test]
fn reused_index_with_a_different_id_is_a_new_call() {
    let mut a = ToolCallAssembler::new();
    a.push(d(Some(0), Some("a"), Some("one"), Some("{}")));
    a.push(d(Some(0), Some("b"), Some("two"), Some("{")));
    a.push(d(Some(0), None, None, Some("}")));
    assert_eq!(
        a.finish(),
        vec![call("a", "one", "{}"), call("b", "two", "{}")]
    );
}

#[test]
fn missing_ids_get_deterministic_ids_and_empty_fragments_are_dropped() {
    let mut a = ToolCallAssembler::new();
    assert!(a.is_empty());
    a.push(d(Some(3), None, Some("f"), Some("{}")));
    a.push(d(Some(4), None, None, None));
    a.push(d(Some(5), Some(""), Some("g"), None));
    assert!(!a.is_empty());
    assert_eq!(
        a.finish(),
        vec![call("call_0", "f", "{}"), call("call_1", "g", "")]
    );
}

#[test]
fn fragment_without_index_or_id_first_opens_a_call() {
    let mut a = ToolCallAssembler::new();
    a.push(d(None, None, Some("lonely"), Some("{}")));
    assert_eq!(a.finish(), vec![call("call_0", "lonely", "{}")]);
}

#[test]
fn excerpt_is_bounded_and_char_safe() {
    let long = "é".repeat(1000);
    let e = excerpt(&long);
    assert_eq!(e.chars().count(), 300);
    assert!(e.ends_with('…'));
    assert_eq!(excerpt("  short  "), "short");
}
