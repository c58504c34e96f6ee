//! Several models: abilities, hints, the default, their errors.

use super::*;

const MODELS: &str = r#"
default_model = "local"

[[models]]
name = "cloud"
base_url = "https://api.example.com/v1"
api_key_env = "CLOUD_KEY"
model = "gpt-4o"
hints = ["smart", "vision"]
context_window = 200000
max_output_tokens = 8000

[[models]]
name = "local"
base_url = "http://127.0.0.1:11434/v1"
abilities = { tool_call = false, json_mode = true }
hints = ["fast"]
synthesis = false
"#;

#[test]
fn several_models_with_abilities_and_hints() {
    let c = load(Some(MODELS), &[("CLOUD_KEY", "ck"), ("LLM_API_KEY", "lk")]).unwrap();
    assert_eq!(c.default_model, "local");
    let [cloud, local] = &c.models[..] else {
        panic!("two models expected")
    };
    assert_eq!(
        (
            cloud.model.as_str(),
            cloud.context_window,
            cloud.max_output_tokens
        ),
        ("gpt-4o", 200_000, 8000)
    );
    assert_eq!(cloud.hints, ["smart", "vision"]);
    assert_eq!(
        cloud.synthesis,
        SynthesisPolicy::Auto,
        "synthesis is auto unless a model says otherwise"
    );
    assert_eq!(
        local.synthesis,
        SynthesisPolicy::Never,
        "false reads as never"
    );
    assert_eq!(cloud.abilities, Abilities::default());
    assert_eq!(cloud.api_key, Some(Secret::new("ck")));
    assert!(!cloud.default && local.default);
    // `model` defaults to the name; missing abilities default to true.
    assert_eq!(local.model, "local");
    let expected = Abilities {
        tool_call: false,
        json_mode: true,
        tool_choice: true,
        vision: true,
        json_schema: false,
    };
    assert_eq!(local.abilities, expected);
    // The default model falls back to LLM_API_KEY.
    assert_eq!(local.api_key, Some(Secret::new("lk")));
}

#[test]
fn llm_variables_override_only_the_default_model() {
    let c = load(
        Some(MODELS),
        &[("LLM_MODEL", "qwen2.5"), ("LLM_TOOL_CALL", "true")],
    )
    .unwrap();
    assert_eq!(c.models[1].model, "qwen2.5");
    assert!(c.models[1].abilities.tool_call);
    assert_eq!(c.models[0].model, "gpt-4o");
    assert!(
        c.models[0].api_key.is_none(),
        "CLOUD_KEY is unset and cloud is not the default"
    );
}

#[test]
fn default_flag_and_first_model_rules() {
    let two = "[[models]]\nname = \"a\"\n[[models]]\nname = \"b\"\n";
    assert_eq!(load(Some(two), &[]).unwrap().default_model, "a");
    let flagged = "[[models]]\nname = \"a\"\n[[models]]\nname = \"b\"\ndefault = true\n";
    assert_eq!(load(Some(flagged), &[]).unwrap().default_model, "b");
    let both =
        "[[models]]\nname = \"a\"\ndefault = true\n[[models]]\nname = \"b\"\ndefault = true\n";
    assert!(err(Some(both), &[]).starts_with("models[1].default"));
}

#[test]
fn model_errors_name_the_entry() {
    let bad_url = "[[models]]\nname = \"a\"\n[[models]]\nname = \"b\"\nbase_url = \"ftp://x\"\n";
    assert_eq!(
        err(Some(bad_url), &[]),
        r#"models[1].base_url: "ftp://x" is not an http(s) URL"#
    );
    let dup = "[[models]]\nname = \"a\"\n[[models]]\nname = \"a\"\n";
    assert!(err(Some(dup), &[]).contains(r#"models[1].name: duplicate model name "a""#));
    let unknown = "default_model = \"zz\"\n[[models]]\nname = \"a\"\n";
    assert!(err(Some(unknown), &[]).starts_with(r#"default_model: "zz" is not a configured model"#));
    let compact = "[react]\ncompact_model = \"zz\"\n";
    assert!(err(Some(compact), &[]).starts_with("react.compact_model"));
}

#[test]
fn file_values_are_validated_under_their_names() {
    assert_eq!(
        err(Some("[react]\nmax_iterations = 0\n"), &[]),
        "invalid value 0 for react.max_iterations: expected a positive integer"
    );
    assert!(
        err(Some("[server]\ndatabase_url = \"redis://x\"\n"), &[]).contains("server.database_url")
    );
}

#[test]
fn unknown_field_or_bad_toml_fails_with_the_line() {
    let message = err(Some("[server]\nbind = \"127.0.0.1:1\"\nbnid = 3\n"), &[]);
    assert!(
        message.contains("bnid") && message.contains("line 3"),
        "{message}"
    );
    let message = err(Some("[react]\nmax_iterations = \"ten\"\n"), &[]);
    assert!(message.contains("line 2"), "{message}");
    let message = err(
        Some("[[models]]\nname = \"a\"\nabilities = { tool_cal = true }\n"),
        &[],
    );
    assert!(message.contains("tool_cal"), "{message}");
}

#[test]
fn sampling_settings_are_parsed_and_unset_by_default() {
    let file = "[[models]]\nname = \"a\"\ntemperature = 0\ntop_p = 0.5\nseed = 3\n\n\
                [[models]]\nname = \"b\"";
    let c = load(Some(file), &[]).unwrap();
    let [a, b] = &c.models[..] else {
        panic!("two models expected")
    };
    assert_eq!(
        (a.temperature, a.top_p, a.seed),
        (Some(0.0), Some(0.5), Some(3))
    );
    assert!(b.sampling().is_empty(), "nothing is set unless written");
}

#[test]
fn sampling_settings_out_of_range_name_the_key() {
    let cases = [
        (
            "temperature = 2.1",
            "invalid value 2.1 for models[1].temperature: expected a number from 0 to 2",
        ),
        ("temperature = -0.5", "models[1].temperature"),
        ("temperature = nan", "models[1].temperature"),
        (
            "top_p = 0",
            "invalid value 0.0 for models[1].top_p: expected a number greater than 0 and at most 1",
        ),
        ("top_p = 1.5", "models[1].top_p"),
        ("seed = -1", "seed"),
    ];
    for (line, expected) in cases {
        let file = format!("[[models]]\nname = \"a\"\n\n[[models]]\nname = \"b\"\n{line}");
        let e = err(Some(&file), &[]);
        assert!(e.contains(expected), "{line}: {e}");
    }
}

#[test]
fn llm_sampling_variables_set_the_default_model() {
    let c = load(
        None,
        &[
            ("LLM_TEMPERATURE", "0.3"),
            ("LLM_TOP_P", "0.8"),
            ("LLM_SEED", "9"),
        ],
    )
    .unwrap();
    let s = default_model(&c).sampling();
    assert_eq!(
        (s.temperature, s.top_p, s.seed),
        (Some(0.3), Some(0.8), Some(9))
    );
    let cases = [
        (
            "LLM_TEMPERATURE",
            "hot",
            r#"invalid value "hot" for LLM_TEMPERATURE: expected a number"#,
        ),
        (
            "LLM_TEMPERATURE",
            "3",
            r#"invalid value "3" for LLM_TEMPERATURE: expected a number from 0 to 2"#,
        ),
        ("LLM_TOP_P", "0", r#"invalid value "0" for LLM_TOP_P"#),
        ("LLM_SEED", "-2", r#"invalid value "-2" for LLM_SEED"#),
    ];
    for (var, value, expected) in cases {
        let e = err(None, &[(var, value)]);
        assert!(e.contains(expected), "{var}={value}: {e}");
    }
}

#[test]
fn anthropic_models_get_anthropic_defaults() {
    let file = r#"
[[models]]
name = "claude"
model = "claude-sonnet-4-5"
api = "anthropic-messages"
thinking = { budget_tokens = 2048 }

[[models]]
name = "local"
api = "anthropic-messages"
base_url = "http://127.0.0.1:8080"
cache = false

[[models]]
name = "gpt"
"#;
    let c = load(Some(file), &[("ANTHROPIC_API_KEY", "ak")]).unwrap();
    let [claude, local, gpt] = &c.models[..] else {
        panic!("three models: {:?}", c.models)
    };
    assert_eq!(claude.api, crate::config::Api::AnthropicMessages);
    assert_eq!(claude.base_url, "https://api.anthropic.com");
    assert_eq!(claude.api_key.as_ref().map(|k| k.expose()), Some("ak"));
    assert_eq!(claude.thinking.map(|t| t.budget_tokens), Some(2048));
    assert!(claude.cache && !claude.abilities.json_mode);
    assert_eq!(
        (local.base_url.as_str(), local.cache),
        ("http://127.0.0.1:8080", false)
    );
    assert_eq!(gpt.api, crate::config::Api::OpenaiChat);
    assert_eq!(gpt.base_url, "https://api.openai.com/v1");
    assert!(gpt.abilities.json_mode && gpt.api_key.is_none());
    let e = err(
        Some("[[models]]\nname = \"c\"\napi = \"anthropic-messages\"\nthinking = { budget_tokens = 1000 }\n"),
        &[],
    );
    assert!(e.contains("models[0].thinking.budget_tokens"), "{e}");
    let e = err(Some("[[models]]\nname = \"x\"\napi = \"gemini\"\n"), &[]);
    assert!(e.contains("api"), "{e}");
}

#[test]
fn json_schema_is_off_unless_set_and_never_for_anthropic() {
    let file = r#"
[[models]]
name = "llamacpp"
abilities = { tool_call = false, json_schema = true }

[[models]]
name = "plain"

[[models]]
name = "claude"
api = "anthropic-messages"
abilities = { json_schema = true }
"#;
    let c = load(Some(file), &[]).unwrap();
    let [llamacpp, plain, claude] = &c.models[..] else {
        panic!("three models: {:?}", c.models)
    };
    assert!(llamacpp.abilities.json_schema && llamacpp.abilities.json_mode);
    assert!(!plain.abilities.json_schema);
    assert!(
        !claude.abilities.json_schema,
        "the Messages API has no response_format"
    );
    assert!(
        c.summary().contains("json_mode=true json_schema=true"),
        "{}",
        c.summary()
    );
    let c = load(None, &[("LLM_JSON_SCHEMA", "true")]).unwrap();
    assert!(default_model(&c).abilities.json_schema);
}

#[test]
fn synthesis_takes_a_policy_or_the_old_booleans() {
    let file = "[[models]]\nname = \"a\"\nsynthesis = \"always\"\n[[models]]\nname = \"b\"\n\
                synthesis = \"never\"\n[[models]]\nname = \"c\"\nsynthesis = true\n\
                [[models]]\nname = \"d\"\nsynthesis = \"auto\"\n";
    let c = load(Some(file), &[]).unwrap();
    let policies: Vec<SynthesisPolicy> = c.models.iter().map(|m| m.synthesis).collect();
    use SynthesisPolicy::*;
    assert_eq!(policies, [Always, Never, Always, Auto]);
    let e = err(
        Some("[[models]]\nname = \"a\"\nsynthesis = \"sometimes\"\n"),
        &[],
    );
    assert!(
        e.contains("sometimes") && e.contains("\"auto\", \"always\" or \"never\""),
        "{e}"
    );
}

#[test]
fn llm_synthesis_sets_the_default_models_policy() {
    let c = load(None, &[("LLM_SYNTHESIS", "never")]).unwrap();
    assert_eq!(default_model(&c).synthesis, SynthesisPolicy::Never);
    let c = load(None, &[("LLM_SYNTHESIS", "true")]).unwrap();
    assert_eq!(default_model(&c).synthesis, SynthesisPolicy::Always);
    assert_eq!(
        err(None, &[("LLM_SYNTHESIS", "maybe")]),
        r#"invalid value "maybe" for LLM_SYNTHESIS: expected auto, always or never"#
    );
}
