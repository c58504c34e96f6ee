use super::*;

fn call(id: &str) -> CallerCall {
    CallerCall {
        call_id: id.into(),
        name: "confirm".into(),
        arguments: "{}".into(),
    }
}

fn output(id: &str, text: &str) -> ToolOutput {
    ToolOutput {
        call_id: id.into(),
        output: text.into(),
    }
}

#[test]
fn outputs_are_ordered_as_the_calls_and_each_call_is_answered_once() {
    let pending = [call("a"), call("b")];
    let answers = match_outputs(&pending, &[output("b", "2"), output("a", "1")]).unwrap();
    assert_eq!(answers, ["1", "2"]);
    assert_eq!(
        match_outputs(&pending, &[output("a", "1")]),
        Err(OutputsError::Missing("b".into()))
    );
    assert_eq!(
        match_outputs(
            &pending,
            &[output("a", "1"), output("b", "2"), output("c", "3")]
        ),
        Err(OutputsError::Unknown("c".into()))
    );
    assert_eq!(
        match_outputs(&pending, &[output("a", "1"), output("a", "1")]),
        Err(OutputsError::Twice("a".into()))
    );
}
