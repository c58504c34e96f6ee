//! Configuration tests. They build configurations from strings and maps: no test reads or
//! changes the process environment.

use std::collections::HashMap;
use std::net::SocketAddr;

use super::*;
use crate::domain::Abilities;

fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn load(file: Option<&str>, pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
    Config::load_from(file, &env(pairs))
}

fn err(file: Option<&str>, pairs: &[(&str, &str)]) -> String {
    match load(file, pairs) {
        Ok(c) => panic!("expected an error, got {c:?}"),
        Err(e) => e.to_string(),
    }
}

fn default_model(c: &Config) -> &ModelConfig {
    c.default_model_config().expect("default model exists")
}

#[test]
fn defaults_with_nothing_set() {
    let c = load(None, &[]).unwrap();
    assert_eq!(
        c.server.bind,
        "127.0.0.1:8080".parse::<SocketAddr>().unwrap()
    );
    assert_eq!(c.server.database_url, "sqlite://data/reagent.db");
    assert_eq!(c.server.max_body_bytes, 1024 * 1024);
    assert_eq!(c.server.max_query_chars, 100_000);
    // The UI compiled into the binary, whatever the working directory (SPEC §3.4).
    assert_eq!(c.server.static_dir, None);
    assert!(c.summary().contains("ui: compiled into the binary"));
    assert!(!c.auth.enabled());
    assert_eq!((c.llm.timeout_s, c.llm.max_retries), (120, 3));
    assert_eq!(c.models.len(), 1);
    assert_eq!(c.default_model, "default");
    let m = default_model(&c);
    assert_eq!(m.model, "gpt-4o-mini");
    assert_eq!(m.base_url, "https://api.openai.com/v1");
    assert_eq!(m.abilities, Abilities::default());
    assert_eq!((m.context_window, m.max_output_tokens), (128_000, 4096));
    assert!(m.default && m.api_key.is_none());
    let r = &c.react;
    assert_eq!(r.max_iterations, 50);
    assert_eq!((r.tool_selection_threshold, r.tool_selection_max), (12, 6));
    assert_eq!(r.self_reflection_interval, 6);
    assert_eq!(r.cycle_detection_threshold, 3);
    assert_eq!(r.completion_check_min_tools, 3);
    assert!(r.completion_check && r.use_native_tools);
    assert_eq!(r.synthesis_truncation, 2000);
    assert_eq!(r.context_budget_for(128_000, 4096), 128_000 - 4096);
    assert!(!c.tools.allow_private_http);
    assert!(c.tools.http.is_empty() && c.hooks.is_empty());
}

#[test]
fn an_empty_file_gives_the_defaults() {
    assert_eq!(load(Some(""), &[]).unwrap(), load(None, &[]).unwrap());
}

#[test]
fn env_overrides_file() {
    let file = "[server]\nbind = \"0.0.0.0:9000\"\n[react]\nmax_iterations = 7\nsynthesis_truncation = 99\n";
    let from_file = load(Some(file), &[]).unwrap();
    assert_eq!(from_file.server.bind.port(), 9000);
    assert_eq!(from_file.react.max_iterations, 7);

    let c = load(
        Some(file),
        &[
            ("REAGENT_BIND", "127.0.0.1:9100"),
            ("REACT_MAX_ITERATIONS", "9"),
        ],
    )
    .unwrap();
    assert_eq!(c.server.bind.port(), 9100);
    assert_eq!(c.react.max_iterations, 9);
    // A file value with no variable on top survives.
    assert_eq!(c.react.synthesis_truncation, 99);
}

#[test]
fn blank_variables_count_as_unset() {
    let c = load(None, &[("REACT_MAX_ITERATIONS", "  "), ("LLM_MODEL", "")]).unwrap();
    assert_eq!(c.react.max_iterations, 50);
    assert_eq!(default_model(&c).model, "gpt-4o-mini");
}

type Check = fn(&Config) -> bool;

#[test]
fn every_spec_variable_is_read() {
    let table: &[(&str, &str, Check)] = &[
        ("REAGENT_BIND", "0.0.0.0:1234", |c| {
            c.server.bind.port() == 1234
        }),
        ("DATABASE_URL", "postgres://db/x", |c| {
            c.server.database_url == "postgres://db/x"
        }),
        ("REAGENT_STATIC_DIR", "ui/dev", |c| {
            c.server.static_dir.as_deref() == Some(std::path::Path::new("ui/dev"))
                && c.summary()
                    .contains("ui: folder ui/dev (REAGENT_STATIC_DIR)")
        }),
        ("LLM_BASE_URL", "http://localhost:11434/v1", |c| {
            default_model(c).base_url == "http://localhost:11434/v1"
        }),
        ("LLM_API_KEY", "sk-a", |c| {
            default_model(c).api_key == Some(Secret::new("sk-a"))
        }),
        ("OPENAI_API_KEY", "sk-b", |c| {
            default_model(c).api_key == Some(Secret::new("sk-b"))
        }),
        ("LLM_MODEL", "llama3", |c| {
            default_model(c).model == "llama3"
        }),
        ("LLM_TOOL_CALL", "false", |c| {
            !default_model(c).abilities.tool_call
        }),
        ("LLM_JSON_MODE", "0", |c| {
            !default_model(c).abilities.json_mode
        }),
        ("LLM_TOOL_CHOICE", "no", |c| {
            !default_model(c).abilities.tool_choice
        }),
        ("LLM_CONTEXT_WINDOW", "8192", |c| {
            default_model(c).context_window == 8192
        }),
        ("LLM_MAX_OUTPUT_TOKENS", "1000", |c| {
            default_model(c).max_output_tokens == 1000
        }),
        ("LLM_TIMEOUT_S", "5", |c| c.llm.timeout_s == 5),
        ("LLM_MAX_RETRIES", "0", |c| c.llm.max_retries == 0),
        ("LLM_MAX_RESPONSE_BYTES", "4096", |c| {
            c.llm.max_response_bytes == 4096
        }),
        ("REACT_MAX_ITERATIONS", "4", |c| c.react.max_iterations == 4),
        ("REACT_TOOL_SELECTION_THRESHOLD", "20", |c| {
            c.react.tool_selection_threshold == 20
        }),
        ("REACT_TOOL_SELECTION_MAX", "2", |c| {
            c.react.tool_selection_max == 2
        }),
        ("REACT_SELF_REFLECTION_INTERVAL", "0", |c| {
            c.react.self_reflection_interval == 0
        }),
        ("REACT_CYCLE_DETECTION_THRESHOLD", "5", |c| {
            c.react.cycle_detection_threshold == 5
        }),
        ("REACT_COMPLETION_CHECK_MIN_TOOLS", "1", |c| {
            c.react.completion_check_min_tools == 1
        }),
        ("REACT_SYNTHESIS_TRUNCATION", "300", |c| {
            c.react.synthesis_truncation == 300
        }),
        ("CONTEXT_BUDGET_TOKENS", "5000", |c| {
            c.react.context_budget_for(128_000, 4096) == 5000
        }),
        ("REAGENT_API_KEYS", "alice:k1, bob:k2", |c| {
            c.auth.tenant_for("k1") == Some("alice") && c.auth.tenant_for("k2") == Some("bob")
        }),
        ("REAGENT_HTTP_ALLOW_PRIVATE", "true", |c| {
            c.tools.allow_private_http
        }),
    ];
    let defaults = load(None, &[]).unwrap();
    for (var, value, check) in table {
        assert!(
            !check(&defaults),
            "{var}: the check must fail on the defaults"
        );
        let c = load(None, &[(var, value)]).unwrap_or_else(|e| panic!("{var}={value}: {e}"));
        assert!(check(&c), "{var}={value} was not applied");
    }
}

#[test]
fn llm_api_key_wins_over_openai_api_key() {
    let c = load(None, &[("LLM_API_KEY", "a"), ("OPENAI_API_KEY", "b")]).unwrap();
    assert_eq!(default_model(&c).api_key, Some(Secret::new("a")));
}

#[test]
fn invalid_values_name_the_key_and_the_value() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "REACT_MAX_ITERATIONS",
            "abc",
            r#"invalid value "abc" for REACT_MAX_ITERATIONS: expected a positive integer"#,
        ),
        (
            "REACT_MAX_ITERATIONS",
            "0",
            r#"invalid value "0" for REACT_MAX_ITERATIONS"#,
        ),
        (
            "LLM_MAX_RETRIES",
            "-1",
            r#"invalid value "-1" for LLM_MAX_RETRIES: expected a non-negative integer"#,
        ),
        (
            "LLM_TOOL_CALL",
            "maybe",
            r#"invalid value "maybe" for LLM_TOOL_CALL: expected true or false"#,
        ),
        (
            "REAGENT_HTTP_ALLOW_PRIVATE",
            "2",
            r#"invalid value "2" for REAGENT_HTTP_ALLOW_PRIVATE"#,
        ),
        (
            "REAGENT_BIND",
            "localhost",
            r#"invalid value "localhost" for REAGENT_BIND"#,
        ),
        (
            "DATABASE_URL",
            "mysql://x",
            r#"invalid value "mysql://x" for DATABASE_URL"#,
        ),
        (
            "LLM_BASE_URL",
            "ftp://x",
            r#"LLM_BASE_URL: "ftp://x" is not an http(s) URL"#,
        ),
        (
            "CONTEXT_BUDGET_TOKENS",
            "lots",
            r#"invalid value "lots" for CONTEXT_BUDGET_TOKENS"#,
        ),
        (
            "LLM_MAX_OUTPUT_TOKENS",
            "200000",
            "LLM_MAX_OUTPUT_TOKENS: 200000 must be smaller",
        ),
    ];
    for (var, value, expected) in cases {
        let message = err(None, &[(var, value)]);
        assert!(message.contains(expected), "{var}={value}: got {message:?}");
    }
}

#[test]
fn api_keys_entry_without_colon_is_rejected_without_echoing_it() {
    let message = err(None, &[("REAGENT_API_KEYS", "alice:k1,sk-secret-value")]);
    assert!(
        message.starts_with("REAGENT_API_KEYS: entry 2"),
        "{message}"
    );
    assert!(!message.contains("sk-secret-value"));
    let message = err(None, &[("REAGENT_API_KEYS", "alice:k1,bob:k1")]);
    assert!(message.contains("used twice"), "{message}");
}

#[test]
fn database_url_password_is_not_echoed() {
    let message = err(None, &[("DATABASE_URL", "mysql://u:hunter2@h/db")]);
    assert!(
        message.contains("DATABASE_URL") && !message.contains("hunter2"),
        "{message}"
    );
}

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
    assert_eq!(cloud.abilities, Abilities::default());
    assert_eq!(cloud.api_key, Some(Secret::new("ck")));
    assert!(!cloud.default && local.default);
    // `model` defaults to the name; missing abilities default to true.
    assert_eq!(local.model, "local");
    let expected = Abilities {
        tool_call: false,
        json_mode: true,
        tool_choice: true,
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

const TOOLS_AND_HOOKS: &str = r#"
[tools]
allow_private_http = true

[[tools.http]]
name = "weather"
description = "Current weather for a city"
url = "https://weather.example.com/now"
method = "GET"
parameters = { type = "object", properties = { city = { type = "string" } }, required = ["city"] }
headers = { Authorization = "Bearer tool-secret" }

[[tools.http]]
name = "create_ticket"
description = "Open a ticket"
url = "https://tickets.example.com/api"
writes = true
requires_approval = true

[[hooks]]
kind = "read_only"
tools = "create_*"
priority = -10

[[hooks]]
kind = "webhook"
url = "https://hooks.example.com/verdict"
policy = "fail_closed"
timeout_ms = 2000
"#;

#[test]
fn http_tools_and_hooks_are_parsed() {
    let c = load(Some(TOOLS_AND_HOOKS), &[]).unwrap();
    assert!(c.tools.allow_private_http);
    let [weather, ticket] = &c.tools.http[..] else {
        panic!("two tools expected")
    };
    assert_eq!(weather.method, "GET");
    assert_eq!(weather.parameters["required"][0], "city");
    assert_eq!(ticket.method, "POST");
    assert!(ticket.writes && ticket.requires_approval);
    assert_eq!(c.hooks.len(), 2);
    assert_eq!(
        (c.hooks[0].kind.as_str(), c.hooks[0].priority),
        ("read_only", -10)
    );
    assert_eq!(c.hooks[0].tools.as_deref(), Some("create_*"));
    assert_eq!(c.hooks[1].policy, super::FailurePolicy::FailClosed);
    assert_eq!(c.hooks[1].timeout_ms, Some(2000));
}

#[test]
fn tool_and_hook_errors_name_the_entry() {
    let dup = format!("{TOOLS_AND_HOOKS}\n[[tools.http]]\nname = \"weather\"\ndescription = \"d\"\nurl = \"http://x\"\n");
    assert!(
        err(Some(&dup), &[]).starts_with(r#"tools.http[2].name: duplicate tool name "weather""#)
    );
    let builtin =
        "[[tools.http]]\nname = \"calculator\"\ndescription = \"d\"\nurl = \"http://x\"\n";
    assert!(err(Some(builtin), &[]).contains("built-in"));
    let kind = "[[hooks]]\nkind = \"telepathy\"\n";
    assert!(err(Some(kind), &[]).starts_with(r#"hooks[0].kind: unknown hook kind "telepathy""#));
    let webhook = "[[hooks]]\nkind = \"webhook\"\n";
    assert!(err(Some(webhook), &[]).starts_with("hooks[0].url"));
}

#[test]
fn debug_hides_secrets() {
    let file = format!("{TOOLS_AND_HOOKS}\n[auth]\nkeys = [{{ name = \"ops\", key = \"file-secret\" }}]\nmetrics_key = \"metrics-secret\"\n");
    let c = load(
        Some(&file),
        &[
            ("LLM_API_KEY", "llm-secret"),
            ("DATABASE_URL", "postgres://u:db-secret@h/db"),
        ],
    )
    .unwrap();
    assert_eq!(c.auth.tenant_for("file-secret"), Some("ops"));
    for text in [format!("{c:?}"), c.summary()] {
        for secret in [
            "file-secret",
            "metrics-secret",
            "llm-secret",
            "db-secret",
            "tool-secret",
        ] {
            assert!(!text.contains(secret), "{secret} leaked in {text}");
        }
    }
    assert!(format!("{c:?}").contains("Secret(***)"));
    assert!(c.summary().contains("key set"));
}

#[test]
fn explicit_config_file_must_exist_but_default_may_not() {
    let dir = tempfile::tempdir().unwrap();
    let default_path = dir.path().join("config.toml");
    assert!(Config::load_with(&env(&[]), &default_path).is_ok());
    let missing = dir.path().join("nope.toml");
    let e = Config::load_with(
        &env(&[("REAGENT_CONFIG", missing.to_str().unwrap())]),
        &default_path,
    )
    .unwrap_err();
    assert!(matches!(e, ConfigError::Read { .. }), "{e}");
    std::fs::write(&default_path, "[react]\nmax_iterations = 3\n").unwrap();
    assert_eq!(
        Config::load_with(&env(&[]), &default_path)
            .unwrap()
            .react
            .max_iterations,
        3
    );
}

/// The shipped `config.toml` must change nothing as is...
const EXAMPLE: &str = include_str!("../../config.toml");

#[test]
fn example_config_file_gives_the_defaults() {
    assert_eq!(load(Some(EXAMPLE), &[]).unwrap(), load(None, &[]).unwrap());
}

/// ...and every commented-out setting (`# key = …`, as opposed to `## prose`) must be valid
/// once uncommented, so the example never drifts from the real schema.
#[test]
fn example_config_file_is_valid_when_uncommented() {
    let uncommented: String = EXAMPLE
        .lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(setting) => setting,
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let c = load(Some(&uncommented), &[("OPENAI_API_KEY", "k")]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.default_model, "openai");
    assert_eq!(c.models.len(), 4);
    assert_eq!(c.tools.http.len(), 1);
    let kinds: Vec<&str> = c.hooks.iter().map(|h| h.kind.as_str()).collect();
    assert_eq!(kinds, HOOK_KINDS);
    assert!(c.auth.enabled());
    assert_eq!(c.react.compact_model.as_deref(), Some("llamacpp"));
}

#[test]
fn connection_limits_from_file_and_environment() {
    let c = load(None, &[]).unwrap();
    assert_eq!(
        (c.server.header_timeout_s, c.server.max_connections),
        (30, None)
    );
    let file = "[server]\nheader_timeout_s = 7\nmax_connections = 300\n";
    let c = load(Some(file), &[]).unwrap();
    assert_eq!(
        (c.server.header_timeout_s, c.server.max_connections),
        (7, Some(300))
    );
    let c = load(
        Some(file),
        &[
            ("REAGENT_HEADER_TIMEOUT_S", "3"),
            ("REAGENT_MAX_CONNECTIONS", "50"),
        ],
    )
    .unwrap();
    assert_eq!(
        (c.server.header_timeout_s, c.server.max_connections),
        (3, Some(50))
    );
    assert_eq!(
        err(None, &[("REAGENT_HEADER_TIMEOUT_S", "0")]),
        r#"invalid value "0" for REAGENT_HEADER_TIMEOUT_S: expected a positive integer"#
    );
    assert!(err(None, &[("REAGENT_MAX_CONNECTIONS", "many")]).contains("REAGENT_MAX_CONNECTIONS"));
    assert!(err(Some("[server]\nmax_connections = 0\n"), &[]).contains("server.max_connections"));
    assert_eq!(c.server.sse_stall_s, 60);
    let c = load(None, &[("REAGENT_SSE_STALL_S", "5")]).unwrap();
    assert_eq!(c.server.sse_stall_s, 5);
    assert!(err(None, &[("REAGENT_SSE_STALL_S", "0")]).contains("REAGENT_SSE_STALL_S"));
}
