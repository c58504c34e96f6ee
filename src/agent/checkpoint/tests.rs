use serde_json::{json, Value};

use super::*;

fn checkpoint() -> Checkpoint {
    Checkpoint {
        mode: Mode::Native,
        query: "look \"it\" up".into(),
        tools: vec!["lookup".into()],
        iterations: 3,
        max_iterations: 20,
        tool_calls: 2,
        usage: Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
            total_tokens: 15,
            llm_calls: 3,
            cache_read_tokens: 6,
            cache_write_tokens: 2,
            ..Usage::default()
        },
        messages: (0..40)
            .map(|i| Message::user(format!("message {i}\n")))
            .collect(),
        steps: (0..2)
            .map(|i| StepRecord {
                iteration: i,
                call_id: format!("c{i}"),
                tool: "lookup".into(),
                arguments: json!({"x": i}),
                observation: "found".into(),
                error: false,
                blocked: i == 1,
                duration_ms: 7,
            })
            .collect(),
        processed: vec![Interrupt {
            id: uuid::Uuid::new_v4(),
            content: "stop".into(),
        }],
        in_flight: vec![InFlightCall {
            call_id: "c2".into(),
            tool: "lookup".into(),
            arguments: Err("{not json".into()),
        }],
        checklist_done: true,
        last_parse_failed: false,
        executions: 2,
        client_tools: vec![crate::llm::ToolDefinition {
            name: "confirm".into(),
            description: "Ask the user".into(),
            parameters: json!({"type": "object"}),
        }],
        awaiting: vec![CallerCall {
            call_id: "c3".into(),
            name: "confirm".into(),
            arguments: "{\"q\":\"ok?\"}".into(),
        }],
        continues: None,
    }
}

/// `cp` written as the loop writes it: fixed fields, head, and the two lists.
fn written(cp: &Checkpoint) -> String {
    let fixed = CheckpointFixed {
        mode: cp.mode,
        query: &cp.query,
        tools: &cp.tools,
        max_iterations: cp.max_iterations,
        client_tools: &cp.client_tools,
    }
    .to_json()
    .unwrap();
    let head = CheckpointHead {
        iterations: cp.iterations,
        tool_calls: cp.tool_calls,
        usage: cp.usage,
        processed: &cp.processed,
        in_flight: cp.in_flight.iter().map(InFlightRef::from).collect(),
        checklist_done: cp.checklist_done,
        last_parse_failed: cp.last_parse_failed,
        executions: cp.executions,
        awaiting: &cp.awaiting,
    };
    let (mut messages, mut steps) = (JsonList::default(), JsonList::default());
    head.to_json(
        &fixed,
        |out| messages.write(&cp.messages, out),
        |out| steps.write(&cp.steps, out),
    )
    .unwrap()
    .join()
}

#[test]
fn the_head_and_its_lists_read_back_as_the_checkpoint() {
    // Every field set, then the other way round (flags flipped, lists empty, other numbers).
    let full = checkpoint();
    let mut other = checkpoint();
    other.mode = Mode::Json;
    other.iterations = 0;
    other.usage = Usage {
        prompt_tokens: u64::MAX,
        completion_tokens: 0,
        total_tokens: 1234567890123,
        llm_calls: 1,
        cache_read_tokens: u64::MAX,
        cache_write_tokens: 0,
        ..Usage::default()
    };
    other.processed.clear();
    other.in_flight = vec![InFlightCall {
        call_id: "c\"9".into(),
        tool: "lookup".into(),
        arguments: Ok(json!({"q": "a\nb"})),
    }];
    other.checklist_done = false;
    other.last_parse_failed = true;
    other.executions = 7;
    let mut empty = other.clone();
    empty.in_flight.clear();
    empty.steps.clear();
    for cp in [full, other, empty] {
        let json = written(&cp);
        let back: Checkpoint = serde_json::from_str(&json).unwrap();
        assert_eq!(back, cp);
        // The same JSON as the whole checkpoint serialised (up to the order of the fields).
        let value: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value, serde_json::to_value(&cp).unwrap());
    }
}

#[test]
fn a_long_list_serialises_only_what_was_appended_since_the_last_write() {
    let mut list = JsonList::default();
    let mut items: Vec<Value> = Vec::new();
    for i in 0..3 * JSON_KEEP_FROM {
        let mut out = CheckpointJson::default();
        list.write(&items, &mut out).unwrap();
        assert_eq!(out.join(), serde_json::to_string(&items).unwrap(), "at {i}");
        assert_eq!(out.len(), out.join().len());
        let kept = if i < JSON_KEEP_FROM { 0 } else { i };
        assert_eq!(list.kept(), kept, "at {i}");
        items.push(json!({"i": i, "text": "a \"quoted\"\nline"}));
    }
    // What was kept is not serialised again (the list is append-only by contract): a change
    // to an early element does not show, a new element does.
    items[0] = json!("changed");
    items.push(json!("new"));
    let mut out = CheckpointJson::default();
    list.write(&items, &mut out).unwrap();
    let back: Vec<Value> = serde_json::from_str(&out.join()).unwrap();
    assert_eq!(back[0], json!({"i": 0, "text": "a \"quoted\"\nline"}));
    assert_eq!(back.last(), Some(&json!("new")));
    assert_eq!(back.len(), items.len());
}

#[test]
fn a_shorter_list_is_serialised_afresh() {
    let mut list = JsonList::default();
    let items: Vec<u32> = (0..2 * JSON_KEEP_FROM as u32).collect();
    list.write(&items, &mut CheckpointJson::default()).unwrap();
    let mut out = CheckpointJson::default();
    list.write(&items[..3], &mut out).unwrap();
    assert_eq!(out.join(), "[0,1,2]");
    assert_eq!(list.kept(), 0);
}

#[test]
fn a_checkpoint_of_a_long_list_shares_its_chunks_and_copies_at_most_one() {
    let mut list = JsonList::default();
    let item = |i: usize| json!({"i": i, "text": "lorem ipsum dolor sit amet ".repeat(8)});
    let mut items: Vec<Value> = (0..2_000).map(item).collect();
    let mut previous = 0;
    for round in 0..3 {
        let mut out = CheckpointJson::default();
        list.write(&items, &mut out).unwrap();
        let json = serde_json::to_string(&items).unwrap();
        assert_eq!(out.join(), json, "round {round}");
        assert!(json.len() > 20 * JSON_CHUNK, "{} bytes", json.len());
        // What this checkpoint copied: the chunk still being filled and the brackets.
        assert!(
            out.own_len() < JSON_CHUNK + 400,
            "round {round}: {}",
            out.own_len()
        );
        assert!(list.closed_chunks() >= previous && list.closed_chunks() >= 20);
        previous = list.closed_chunks();
        items.extend((0..100).map(|i| item(2_000 + 100 * round + i)));
    }
    // The same cut or another, equal JSON is an equal checkpoint.
    let mut again = CheckpointJson::default();
    JsonList::default().write(&items, &mut again).unwrap();
    let mut whole = CheckpointJson::default();
    list.write(&items, &mut whole).unwrap();
    assert_eq!(again, whole);
    assert_eq!(
        again,
        CheckpointJson::from(serde_json::to_string(&items).unwrap())
    );
}

#[test]
fn a_list_keeps_from_its_threshold_and_a_new_list_keeps_the_threshold() {
    let mut list = JsonList::keeping_from(STEPS_KEEP_FROM);
    let items: Vec<u32> = (0..10).collect();
    for n in 0..items.len() {
        let mut out = CheckpointJson::default();
        list.write(&items[..n], &mut out).unwrap();
        assert_eq!(out.join(), serde_json::to_string(&items[..n]).unwrap());
        let kept = if n < STEPS_KEEP_FROM { 0 } else { n };
        assert_eq!(list.kept(), kept, "at {n}");
    }
    // A shorter list starts afresh, kept again from the same threshold.
    let mut out = CheckpointJson::default();
    list.write(&items[..STEPS_KEEP_FROM], &mut out).unwrap();
    assert_eq!(list.kept(), STEPS_KEEP_FROM);
    assert_eq!(out.join(), "[0,1,2,3]");
}

#[test]
fn answered_caller_calls_join_the_history_and_the_steps() {
    let mut cp = checkpoint();
    cp.answer_pending(vec!["yes".into()]);
    assert!(cp.awaiting.is_empty());
    let last = cp.messages.last().unwrap();
    assert_eq!(
        (last.tool_call_id.as_deref(), last.content.as_str()),
        (Some("c3"), "yes")
    );
    // The synthesis trace is built from the steps: the caller's call is one of them.
    let step = cp.steps.last().unwrap();
    assert_eq!(
        (step.call_id.as_str(), step.tool.as_str(), step.iteration),
        ("c3", "confirm", 3)
    );
    assert_eq!(step.arguments, json!({"q": "ok?"}));
    assert_eq!(step.observation, "yes");
    assert_eq!(cp.steps.len(), 3);
}
