use super::*;
use crate::llm::ToolCall;

fn sample() -> Vec<Message> {
    vec![
        Message::system("you are terse"),
        Message::user("what is 1+1?").pinned(),
    ]
}

#[test]
fn the_estimate_follows_every_append() {
    let mut h = History::new(sample());
    assert_eq!(h.tokens(), estimate_message_tokens(&sample()));
    h.push(Message::assistant_tool_calls(
        "",
        vec![ToolCall {
            id: "call_1".into(),
            name: "calculator".into(),
            arguments: r#"{"expression":"1+1"}"#.into(),
        }],
    ));
    h.push(Message::tool("call_1", "2"));
    h.push(Message::assistant("two ✓"));
    assert_eq!(h.len(), 5);
    assert_eq!(h.tokens(), estimate_message_tokens(&h));
}

#[test]
fn a_request_shares_the_list_and_appends_do_not_copy_it() {
    let mut h = History::new(sample());
    let request = h.shared();
    assert!(
        Arc::ptr_eq(&request, &h.messages),
        "a request copies nothing"
    );
    drop(request);
    // Nobody else holds the list: the append writes in place.
    let before = Arc::as_ptr(&h.messages);
    h.push(Message::assistant("done"));
    assert_eq!(Arc::as_ptr(&h.messages), before);
}

#[test]
fn a_request_still_held_keeps_what_it_was_sent() {
    let mut h = History::new(sample());
    let sent = h.shared();
    h.push(Message::assistant("later"));
    assert_eq!(sent.len(), 2, "the earlier request is unchanged");
    assert_eq!(h.len(), 3);
    assert_eq!(h.clone().into_vec().len(), 3);
    assert_eq!(History::from(sample()).into_vec(), sample());
}

#[test]
fn the_json_for_checkpoints_follows_every_append_and_a_new_history() {
    let mut h = History::new(sample());
    for i in 0..3 * crate::agent::checkpoint::JSON_KEEP_FROM {
        let mut out = CheckpointJson::default();
        h.write_json(&mut out).unwrap();
        assert_eq!(
            out.join(),
            serde_json::to_string(&h.shared()).unwrap(),
            "at {i}"
        );
        h.push(Message::tool(
            format!("call_{i}"),
            format!("result \"{i}\"\n"),
        ));
    }
    // A compaction replaces the history: the kept JSON goes with the old one.
    let mut h = History::new(vec![Message::user("summary")]);
    let mut out = CheckpointJson::default();
    h.write_json(&mut out).unwrap();
    assert_eq!(out.join(), serde_json::to_string(&h.shared()).unwrap());
}
