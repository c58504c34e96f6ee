//! Defaults, the environment over the file, and the errors values get.

use super::*;

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
    // The UI compiled into the binary, whatever the working directory (docs/api.md).
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
        ("LLM_HTTP2", "true", |c| c.llm.http2),
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
        ("REAGENT_RESUME_ON_RESTART", "false", |c| {
            !c.server.resume_on_restart
        }),
        ("REAGENT_SHUTDOWN_GRACE_S", "2", |c| {
            c.server.shutdown_grace_s == 2
        }),
        ("REAGENT_INSTANCE_ID", "node-a", |c| {
            c.server.instance_id.as_deref() == Some("node-a")
        }),
        ("REAGENT_LEASE_TTL_S", "30", |c| c.server.lease_ttl_s == 30),
        ("REAGENT_LEASE_RENEW_S", "3", |c| {
            c.server.lease_renew_s == 3
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
fn a_lease_renewed_no_sooner_than_it_lapses_is_refused() {
    for (ttl, renew) in [("5", "5"), ("2", "3")] {
        let e = load(
            None,
            &[
                ("REAGENT_LEASE_TTL_S", ttl),
                ("REAGENT_LEASE_RENEW_S", renew),
            ],
        )
        .unwrap_err();
        assert_eq!(e.key(), Some("server.lease_renew_s"), "{e}");
    }
    assert!(
        load(None, &[("REAGENT_LEASE_TTL_S", "1")]).is_err(),
        "at least 2"
    );
    let c = load(
        None,
        &[("REAGENT_LEASE_TTL_S", "2"), ("REAGENT_LEASE_RENEW_S", "1")],
    )
    .unwrap();
    assert_eq!((c.server.lease_ttl_s, c.server.lease_renew_s), (2, 1));
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

#[test]
fn a_misspelt_variable_is_named_with_the_nearest_known_one() {
    let c = load(
        None,
        &[
            ("LLM_BASEURL", "http://127.0.0.1:1/v1"),
            ("REACT_MAX_ITERATION", "3"),
        ],
    )
    .unwrap();
    assert_eq!(
        c.warnings,
        [
            "unknown variable LLM_BASEURL is ignored (did you mean LLM_BASE_URL?)",
            "unknown variable REACT_MAX_ITERATION is ignored (did you mean REACT_MAX_ITERATIONS?)",
        ]
    );
    let far = load(None, &[("REAGENT_SOMETHING_ELSE_ENTIRELY", "1")]).unwrap();
    assert_eq!(
        far.warnings,
        ["unknown variable REAGENT_SOMETHING_ELSE_ENTIRELY is ignored"]
    );
}

#[test]
fn known_foreign_and_referenced_variables_do_not_warn() {
    let file = r#"
[[models]]
name = "m"
api_key_env = "LLM_SECOND_KEY"

[[tools.http]]
name = "t"
description = "d"
url = "http://127.0.0.1:9/x"
headers = { Authorization = "Bearer ${REAGENT_TICKETS_TOKEN}" }
"#;
    let c = load(
        Some(file),
        &[
            ("LLM_SECOND_KEY", "k"),
            ("REAGENT_TICKETS_TOKEN", "t"),
            ("REAGENT_SKIP_PG", "1"),
            ("LLM_MAX_RETRIES", "0"),
            ("PATH", "/bin"),
            ("LLMX", "not ours"),
        ],
    )
    .unwrap();
    assert_eq!(c.warnings, Vec::<String>::new());
}

/// The list of known variables is the one start-up checks against: every variable the
/// configuration code reads must be on it, or setting it would print a false warning.
#[test]
fn every_variable_the_configuration_reads_is_known() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/config");
    let mut files = vec![dir.with_extension("rs")];
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    let mut read = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        // Test modules name made-up variables on purpose.
        let code = text
            .split("#[cfg(test)]\nmod tests {")
            .next()
            .unwrap_or_default();
        for part in code.split("(env, \"").skip(1) {
            read.push(part.split('"').next().unwrap_or_default().to_string());
        }
    }
    assert!(read.len() > 30, "found only {read:?}");
    for name in &read {
        assert!(
            crate::config::KNOWN_VARIABLES.contains(&name.as_str()),
            "{name} is read but not in KNOWN_VARIABLES"
        );
    }
}

#[test]
fn cors_origins_are_exact_origins_or_a_star() {
    let pairs = [(
        "REAGENT_CORS_ORIGINS",
        "http://localhost:8000, https://app.example",
    )];
    let c = load(None, &pairs).unwrap();
    assert_eq!(
        c.server.cors_origins,
        ["http://localhost:8000", "https://app.example"]
    );
    let c = load(Some("[server]\ncors_origins = [\"*\"]\n"), &[]).unwrap();
    assert_eq!(c.server.cors_origins, ["*"]);
    for bad in [
        "http://localhost:8000/",
        "localhost:8000",
        "ftp://x",
        "http://x/page",
    ] {
        let message = err(None, &[("REAGENT_CORS_ORIGINS", bad)]);
        assert!(message.contains("REAGENT_CORS_ORIGINS"), "{bad}: {message}");
        let file = format!("[server]\ncors_origins = [{bad:?}]\n");
        let message = err(Some(&file), &[]);
        assert!(message.contains("server.cors_origins"), "{bad}: {message}");
    }
}
