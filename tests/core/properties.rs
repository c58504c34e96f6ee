//! Property tests for the parsers that read untrusted input (a first step of the reliability
//! issue's fuzzing list): the JSON-mode action parser, the streaming chunk decoder and tool-call
//! assembler, and the configuration loader never panic, whatever they are fed. `extract_json`
//! has its own properties beside its code.

use std::collections::HashMap;

use proptest::prelude::*;
use reagent::agent::action::{parse_action, Action};
use reagent::config::{Config, KNOWN_VARIABLES};
use reagent::llm::providers::openai::StreamDecoder;
use reagent::llm::stream::{ToolCallAssembler, ToolCallDelta};
use serde_json::json;

/// JSON-ish noise: fragments that make parsers take their interesting branches.
fn jsonish() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        "\"",
        ":",
        ",",
        "\\",
        "\n",
        "type",
        "tool_call",
        "final_answer",
        "tool_name",
        "tool_args",
        "answer",
        "reasoning",
        "null",
        "1e999",
        "\"x\"",
        "```json",
        "```",
        "choices",
        "delta",
        "tool_calls",
        "index",
        "function",
        "arguments",
        "usage",
        "[DONE]",
        "é",
        "\u{0}",
    ]);
    prop::collection::vec(prop_oneof![atoms.prop_map(String::from), ".{0,8}"], 0..40)
        .prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn action_parser_never_panics(s in prop_oneof![".*", jsonish()]) {
        let _ = parse_action(&s, &[]);
    }

    #[test]
    fn a_wellformed_tool_call_survives_prose_around_it(prefix in "[a-zA-Z .,]{0,40}", name in "[a-z_]{1,12}", n in any::<i64>()) {
        let body = json!({"type": "tool_call", "reasoning": "r", "tool_name": name, "tool_args": {"n": n}});
        let text = format!("{prefix}\n{body}\nthanks");
        match parse_action(&text, &[]) {
            Some(Action::ToolCall { calls, .. }) => {
                prop_assert_eq!(calls.len(), 1);
                prop_assert_eq!(&calls[0].tool_name, &name);
                prop_assert_eq!(&calls[0].tool_args, &json!({"n": n}));
            }
            other => prop_assert!(false, "{:?}", other),
        }
    }

    #[test]
    fn stream_decoder_never_panics(chunks in prop::collection::vec(prop_oneof![".*", jsonish()], 0..12)) {
        let mut d = StreamDecoder::new();
        for c in &chunks {
            if d.feed(c).is_err() {
                break;
            }
        }
        let _ = d.end_of_input();
    }

    #[test]
    fn assembler_never_panics_and_keeps_every_named_call(
        deltas in prop::collection::vec(
            (prop::option::of(0u32..4), prop::option::of("[a-c]{1,2}"), prop::option::of("[a-z]{0,3}"), prop::option::of(".{0,6}")),
            0..30,
        )
    ) {
        let mut a = ToolCallAssembler::new();
        for (index, id, name, arguments) in deltas {
            a.push(ToolCallDelta { index, id, name, arguments, extra_content: None });
        }
        for call in a.finish() {
            prop_assert!(!call.id.is_empty());
        }
    }

    #[test]
    fn config_loader_never_panics(text in prop_oneof![".*", jsonish(), "[a-z_]{1,10} = [0-9a-z\"]{0,6}\n\\[[a-z]{1,6}\\]\n[a-z_]{1,10} = [0-9]{0,4}"], key in prop::sample::select(KNOWN_VARIABLES.to_vec()), value in ".{0,10}") {
        let mut env = HashMap::new();
        env.insert(key.to_string(), value);
        let _ = Config::load_from(Some(&text), &env);
    }
}
