use super::*;

/// What a gate lets through for each piece, in order.
fn gated(pieces: &[&str]) -> Vec<String> {
    let mut gate = Gate::default();
    pieces.iter().map(|p| gate.push(p).to_string()).collect()
}

#[test]
fn prose_streams_at_once_and_calls_are_held() {
    assert_eq!(gated(&["The sea", " is blue."]), ["The sea", " is blue."]);
    assert_eq!(gated(&["  ", "Hi"]), ["", "  Hi"]);
    for call in [
        r#"{"name": "calc", "arguments": {}}"#,
        r#"[{"name": "calc"}]"#,
        "<tool_call>{}</tool_call>",
        "[TOOL_CALLS] calc[ARGS]{}",
    ] {
        let pieces: Vec<&str> = vec![&call[..1], &call[1..]];
        assert_eq!(gated(&pieces), ["", ""], "{call}");
    }
}

#[test]
fn a_fence_shows_once_its_body_cannot_open_a_call() {
    assert_eq!(
        gated(&["``", "`py", "thon\npri", "nt(1)\n```\nDone."]),
        ["", "", "```python\npri", "nt(1)\n```\nDone."]
    );
    assert_eq!(
        gated(&["Sure:\n", "```json\n", "{\"name\": \"calc\"}", "\n```"]),
        ["Sure:\n", "", "", ""],
        "a fenced call is held (its short preamble already streamed)"
    );
    assert_eq!(gated(&["Use `ls` here"]), ["Use `ls` here"]);
    let mut gate = Gate::default();
    gate.push("a ```json\n{}");
    assert_eq!(
        gate.text(),
        "a ```json\n{}",
        "the gate keeps the whole text"
    );
}

/// What a JSON-mode reply gives out for each piece.
fn decoded(pieces: &[&str]) -> Vec<String> {
    let mut json = JsonAnswer::default();
    pieces.iter().map(|p| json.push(p)).collect()
}

#[test]
fn a_final_answer_is_decoded_as_it_streams() {
    assert_eq!(
        decoded(&[
            r#"{"type": "final_"#,
            r#"answer", "answer": "Two lines\n"#,
            "about the sea \\u00e9\\ud83c\\udf0a \\\"ok\\\"\"",
            r#", "reasoning": "x"}"#
        ]),
        ["", "Two lines\n", "about the sea é🌊 \"ok\"", ""]
    );
}

#[test]
fn an_answer_before_its_type_waits_for_it_and_a_call_gives_nothing() {
    assert_eq!(
        decoded(&[
            r#"```json {"answer": "early", "#,
            r#""type": "final_answer"}"#
        ]),
        ["", "early"]
    );
    assert_eq!(
        decoded(&[
            r#"{"type": "tool_call", "tool_name": "calc", "answer": "no", "#,
            r#""tool_args": {"answer": "nested"}}"#
        ]),
        ["", ""]
    );
    assert_eq!(
        decoded(&[
            r#"{"reasoning": {"answer": "x"}, "n": 3, "type": "final_answer", "#,
            r#""answer": "yes"}{"answer": "later"}"#
        ]),
        ["", "yes"],
        "nested values are skipped, and only the first object counts"
    );
}

#[test]
fn the_observation_label_copied_into_an_answer_never_shows() {
    let head = r#"{"type": "final_answer", "answer": ""#;
    assert_eq!(
        decoded(&[head, "Obser", "vation:", " 3", "91\"}"]),
        ["", "", "", "3", "91"],
        "held while it may be the label, then given out without it"
    );
    assert_eq!(
        decoded(&[head, "Obser", "vatory hours\"}"]),
        ["", "", "Observatory hours"],
        "a word that only starts like it is given out whole"
    );
    assert_eq!(
        decoded(&[
            r#"{"answer": "Observation: 7", "#,
            r#""type": "final_answer"}"#
        ]),
        ["", "7"]
    );
}

#[test]
fn verdicts_are_told_from_answers() {
    for verdict in [
        "Yes, the answer is fully correct. The current_time tool returned 10:42.",
        "Yes, I am still on track for that goal.",
        "**Yes.** All three checks pass.",
        "1. The answer fully addresses the original question.",
        "I am still on track: next I will divide.",
        "No contradictions were found.",
        "Correct.",
    ] {
        assert!(is_verdict(verdict), "{verdict}");
    }
    for answer in [
        "The current time in Tokyo is 10:42 JST.",
        "2400.15 is the result. It was verified twice.",
        "Nothing was found for that query.",
        "Now that both values are known: 12 and 30.",
        "The capital of France is Paris.",
    ] {
        assert!(!is_verdict(answer), "{answer}");
    }
}

#[test]
fn the_answer_checks() {
    assert_eq!(problem("Paris.", Some("stop")), None);
    assert_eq!(problem("  ", Some("stop")), Some("empty"));
    assert_eq!(
        problem("The list goes on and", Some("length")),
        Some("cut by the output limit")
    );
    assert_eq!(
        problem(r#"{"name": "calc", "arguments": {"x": 1}}"#, None),
        Some("a tool call written as text")
    );
}

fn answer_events(f: impl FnOnce(&mut AnswerStream)) -> Vec<AnswerEvent> {
    let (sink, mut rx) = EventSink::channel();
    let mut stream = AnswerStream::new(sink);
    f(&mut stream);
    let mut out = Vec::new();
    while let Ok(AgentEvent::Answer(e)) = rx.try_recv() {
        out.push(e);
    }
    out
}

fn delta(s: &str) -> AnswerEvent {
    AnswerEvent::Delta {
        content: s.to_string(),
    }
}

#[test]
fn finishing_keeps_what_streamed_when_the_answer_goes_on_from_it() {
    let reply = Some(AnswerSource::Reply);
    let events = answer_events(|s| {
        s.delta(AnswerSource::Reply, "Par");
        s.finish(AnswerSource::Reply, "Paris.", false);
    });
    assert_eq!(
        events,
        [
            AnswerEvent::Start { source: reply },
            delta("Par"),
            delta("is."),
            AnswerEvent::Done {
                content: "Paris.".into(),
                fallback: false
            }
        ]
    );
    let events = answer_events(|s| {
        s.delta(AnswerSource::Reply, "Let me check");
        s.finish(AnswerSource::Synthesis, "Paris.", false);
    });
    assert_eq!(
        events,
        [
            AnswerEvent::Start { source: reply },
            delta("Let me check"),
            AnswerEvent::Reset,
            AnswerEvent::start(AnswerSource::Synthesis),
            delta("Paris."),
            AnswerEvent::Done {
                content: "Paris.".into(),
                fallback: false
            }
        ]
    );
}
