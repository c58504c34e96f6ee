use super::CallIds;
use crate::llm::ToolCall;

fn calls(ids: &[&str]) -> Vec<ToolCall> {
    ids.iter()
        .map(|id| ToolCall {
            id: id.to_string(),
            name: "t".into(),
            arguments: "{}".into(),
        })
        .collect()
}

fn assign(ids: &mut CallIds, iteration: u32, given: &[&str]) -> Vec<String> {
    let mut c = calls(given);
    ids.assign(iteration, &mut c);
    c.into_iter().map(|c| c.id).collect()
}

#[test]
fn empty_ids_are_numbered_by_iteration_and_position() {
    let mut ids = CallIds::default();
    assert_eq!(
        assign(&mut ids, 3, &["", "x", ""]),
        ["call_3_1", "x", "call_3_3"]
    );
}

#[test]
fn repeats_within_one_response_are_renamed() {
    let mut ids = CallIds::default();
    assert_eq!(assign(&mut ids, 1, &["a", "a", "a"]), ["a", "a_2", "a_3"]);
    // A suffix another call of the response already carries is skipped.
    let mut ids = CallIds::default();
    assert_eq!(assign(&mut ids, 1, &["a", "a", "a_2"]), ["a", "a_3", "a_2"]);
}

#[test]
fn ids_reused_in_later_iterations_are_renamed() {
    let mut ids = CallIds::default();
    assert_eq!(
        assign(&mut ids, 1, &["call_0", "call_1"]),
        ["call_0", "call_1"]
    );
    assert_eq!(assign(&mut ids, 2, &["call_0"]), ["call_0_2"]);
    assert_eq!(
        assign(&mut ids, 3, &["call_0", "call_0_2"]),
        ["call_0_3", "call_0_2_2"]
    );
    assert_eq!(ids.next(4), "call_4_1");
    // A provider id that collides with a generated one is renamed too.
    assert_eq!(assign(&mut ids, 5, &["call_4_1"]), ["call_4_1_2"]);
}
