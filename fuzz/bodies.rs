// The fuzz target bodies, shared by the cargo-fuzz crate (`fuzz/fuzz_targets/*.rs`) and by the
// CI smoke test (`tests/core/fuzz_smoke.rs`), both through `include!`, so CI runs exactly what the
// fuzzer runs. Each body takes raw bytes, must never panic, and asserts the invariants the
// rest of the service relies on (a failed assertion is a finding, like a crash).

use std::collections::HashMap;

use reagent::agent::action::{cut_off, parse_action, Action};
// The variables the loader knows; the fuzzer picks among them by index.
use reagent::config::{Config, KNOWN_VARIABLES as ENV_KEYS};
use reagent::llm::extract_json;
use reagent::llm::providers::openai::StreamDecoder;
use reagent::llm::StreamEvent;

/// `extract_json`: never panics; anything returned is an object; an object's own text is found.
pub fn extract_json_body(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Some(v) = extract_json(&text) {
        assert!(v.is_object(), "extract_json returned a non-object: {v}");
        // Whatever was found, written back out, is found again with the same keys. (Not
        // `==`: serde_json's default float parser may land one ULP off on re-parsing a long
        // float, which the fuzzer found; that is serde_json's documented trade-off, not ours.)
        let again = extract_json(&v.to_string());
        let keys = |v: &serde_json::Value| {
            v.as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default()
        };
        let again = again.unwrap_or_else(|| panic!("round trip lost {v}"));
        assert_eq!(keys(&again), keys(&v), "round trip of {v}");
    }
}

/// The JSON-mode action parser: never panics; a tool call has a non-blank name and object-or-other
/// JSON arguments; a call written with the aliases names a tool of the run; a final answer
/// always has text when the reply had text.
pub fn action_body(data: &[u8]) {
    const NAME_KEYS: [&str; 4] = ["tool_name", "tool", "name", "action"];
    let text = String::from_utf8_lossy(data);
    let tools = [reagent::llm::ToolDefinition {
        name: "calculator".into(),
        description: String::new(),
        parameters: serde_json::json!({"type": "object", "properties": {"expression": {}}}),
    }];
    let found = extract_json(&text);
    match parse_action(&text, &tools) {
        // No action although there is an object: only a tool call without a usable name, or
        // an object the output cap cut (the loop then asks for a reformat).
        None if cut_off(&text) => {}
        None => {
            if let Some(obj) = found {
                let named = NAME_KEYS.iter().any(|k| {
                    obj.get(*k)
                        .filter(|n| !n.is_null())
                        .map(|n| n.as_str().is_none_or(|s| !s.trim().is_empty()))
                        .unwrap_or(false)
                });
                assert!(
                    obj["type"] == "tool_call" && !named,
                    "an object was found but no action: {obj}"
                );
            }
        }
        Some(Action::ToolCall { calls, .. }) => {
            assert!(!calls.is_empty(), "a tool call without calls");
            let explicit = found.is_some_and(|o| o["type"] == "tool_call");
            for c in calls {
                let name = &c.tool_name;
                assert!(!name.trim().is_empty(), "a tool call without a name");
                assert!(
                    explicit || name == "calculator",
                    "an aliased call to '{name}', which is no tool of the run"
                );
            }
        }
        Some(Action::FinalAnswer { .. }) => {}
    }
}

/// The streaming chunk decoder and tool-call assembler: the input is split into SSE `data`
/// payloads (one per line); never panics; nothing follows `Done`; after `Done`, feeding
/// yields nothing; the end of input always settles the stream.
pub fn stream_body(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut decoder = StreamDecoder::new();
    let mut events = Vec::new();
    let mut failed = false;
    for line in text.split('\n') {
        match decoder.feed(line) {
            Ok(evs) => events.extend(evs),
            Err(_) => {
                // The client stops reading at the first error; the decoder must still be sane.
                failed = true;
                break;
            }
        }
    }
    if !failed {
        match decoder.end_of_input() {
            Ok(evs) => events.extend(evs),
            Err(_) => failed = true,
        }
        assert!(decoder.is_done(), "end of input must settle the stream");
        assert!(decoder
            .feed("{\"choices\":[]}")
            .unwrap_or_default()
            .is_empty());
    }
    let done_at = events
        .iter()
        .position(|e| matches!(e, StreamEvent::Done { .. }));
    if let Some(i) = done_at {
        assert_eq!(i, events.len() - 1, "events after Done: {events:?}");
    }
    for e in &events {
        if let StreamEvent::ToolCalls(calls) = e {
            let mut ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
            assert!(
                ids.iter().all(|id| !id.is_empty()),
                "a tool call without an id"
            );
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(ids.len(), calls.len(), "duplicate tool call ids: {calls:?}");
        }
    }
    let _ = failed;
}

/// `Config::load_from` (docs/configuration.md): the input is a TOML file, then after a line `---` one
/// `N=value` per line (N indexes [`ENV_KEYS`]). Never panics; an accepted configuration keeps
/// the invariants the service relies on; a rejection has a message.
pub fn config_body(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (file, env_text) = match text.split_once("\n---\n") {
        Some((f, e)) => (f, e),
        None => (text.as_ref(), ""),
    };
    let mut env = HashMap::new();
    for line in env_text.lines() {
        if let Some((k, v)) = line.split_once('=') {
            let key = k
                .trim()
                .parse::<usize>()
                .ok()
                .and_then(|i| ENV_KEYS.get(i % ENV_KEYS.len()))
                .map(|k| k.to_string())
                .unwrap_or_else(|| k.to_string());
            env.insert(key, v.to_string());
        }
    }
    match Config::load_from(Some(file), &env) {
        Ok(c) => {
            assert!(!c.models.is_empty(), "no model");
            assert_eq!(
                c.models.iter().filter(|m| m.default).count(),
                1,
                "exactly one default model"
            );
            assert!(c.models.iter().any(|m| m.name == c.default_model));
            assert!(c.llm.timeout_s >= 1);
            assert!(c.react.max_iterations >= 1);
            assert!(c.react.tool_timeout_s >= 1);
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}
