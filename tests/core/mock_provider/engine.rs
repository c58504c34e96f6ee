//! The mock's copies of the engine's texts (`reagent_mock::engine`) are the engine's own: the
//! synthesis prompt, and each note's text before its first variable.

use reagent::agent::prompts;
use reagent::agent::safeguards::Cycle;
use reagent_mock::engine::{ENGINE_NOTES, SYNTHESIS_SYSTEM};

fn common_prefix(a: &str, b: &str) -> String {
    a.chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect()
}

#[test]
fn the_mocks_engine_texts_are_the_engines() {
    assert_eq!(SYNTHESIS_SYSTEM, prompts::SYNTHESIS_SYSTEM);
    let fixed = |f: fn(&str) -> String| common_prefix(&f("a"), &f("b"));
    let notes = [
        fixed(prompts::reflection),
        fixed(|t| prompts::cycle_warning(t, Cycle::SameResult(3))),
        fixed(prompts::observation),
        common_prefix(
            &prompts::interrupt_message(&["a".into()]),
            &prompts::interrupt_message(&["a".into(), "b".into()]),
        ),
        prompts::COMPLETION_CHECK.to_string(),
        common_prefix(
            &prompts::reformat_request("a", &[]),
            &prompts::reformat_request("b", &[]),
        ),
    ];
    assert_eq!(notes, ENGINE_NOTES.map(str::to_string));
    // The other kind of cycle warning begins the same way.
    let repeated = prompts::cycle_warning("t", Cycle::Repeated(3));
    assert!(repeated.starts_with(ENGINE_NOTES[1]));
}
