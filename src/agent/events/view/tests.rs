use std::borrow::Cow;

use super::*;
use crate::agent::events::StepEvent;

#[test]
fn a_delta_without_escapes_is_borrowed() {
    let view = EventView::read("answer", r#"{"status":"delta","content":"Hello"}"#);
    assert!(matches!(
        view,
        EventView::AnswerDelta(Cow::Borrowed("Hello"))
    ));
}

#[test]
fn a_delta_with_escapes_reads_unescaped() {
    let view = EventView::read("answer", r#"{"status":"delta","content":"a\nb"}"#);
    assert!(matches!(view, EventView::AnswerDelta(text) if text == "a\nb"));
    // A status with an escape misses the borrowed path and is still a delta.
    let view = EventView::read("answer", r#"{"status":"delt\u0061","content":"x"}"#);
    assert!(matches!(view, EventView::AnswerDelta(text) if text == "x"));
}

#[test]
fn other_events_are_typed_and_bad_data_says_so() {
    let view = EventView::read("answer", r#"{"status":"reset"}"#);
    assert!(matches!(
        view,
        EventView::Agent(AgentEvent::Answer(AnswerEvent::Reset))
    ));
    let view = EventView::read(
        "step",
        r#"{"type":"thinking","iteration":1,"reasoning":"r"}"#,
    );
    assert!(matches!(
        view,
        EventView::Agent(AgentEvent::Step(StepEvent::Thinking { .. }))
    ));
    let view = EventView::read("answer", r#"{"status":"delta"}"#);
    assert!(matches!(view, EventView::Unreadable(EventName::Answer, _)));
    // An unknown name reads as `done`.
    let view = EventView::read("whatever", "{}");
    assert!(matches!(view, EventView::Unreadable(EventName::Done, _)));
}
