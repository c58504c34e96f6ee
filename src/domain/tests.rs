use super::*;

/// Every value's JSON is its text, and both read back.
fn round_trips<T>(all: &[T])
where
    T: Copy + PartialEq + fmt::Debug + fmt::Display + FromStr + Serialize,
    T: for<'de> Deserialize<'de>,
    <T as FromStr>::Err: fmt::Debug,
{
    for v in all {
        let text = v.to_string();
        assert_eq!(serde_json::to_string(v).unwrap(), format!("\"{text}\""));
        assert_eq!(
            serde_json::from_str::<T>(&format!("\"{text}\"")).unwrap(),
            *v
        );
        assert_eq!(text.parse::<T>().unwrap(), *v);
    }
}

#[test]
fn every_value_round_trips_as_its_text() {
    round_trips(Mode::ALL);
    round_trips(Engine::ALL);
    round_trips(RunStatus::ALL);
    round_trips(MessageRole::ALL);
    round_trips(MessageKind::ALL);
    round_trips(EventName::ALL);
}

#[test]
fn texts_are_the_wire_names() {
    assert_eq!(RunStatus::MaxIterations.as_str(), "max_iterations");
    assert_eq!(Mode::Json.as_str(), "json");
    assert_eq!(MessageKind::Interrupt.as_str(), "interrupt");
    assert_eq!(MessageRole::Assistant.as_str(), "assistant");
    assert_eq!(EventName::Compact.as_str(), "compact");
}

#[test]
fn unknown_text_is_an_error_naming_the_enum() {
    let e = "system".parse::<MessageRole>().unwrap_err();
    assert_eq!(e.to_string(), "unknown message role: \"system\"");
    assert!("done".parse::<RunStatus>().is_err());
    let e = serde_json::from_str::<Mode>("\"dag\"")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unknown variant `dag`, expected `native` or `json`"),
        "{e}"
    );
}

#[test]
fn stored_event_names_read_leniently() {
    assert_eq!(EventName::from_stored("step"), EventName::Step);
    assert_eq!(EventName::from_stored("something-else"), EventName::Done);
}
