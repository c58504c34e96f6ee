//! Tools and hooks in the file, secrets in Debug, the config file itself, connection limits.

use super::*;

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
const EXAMPLE: &str = include_str!("../../../config.toml");

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
    let vars = [
        ("OPENAI_API_KEY", "k"),
        ("DEEPSEEK_API_KEY", "d"),
        ("GEMINI_API_KEY", "g"),
        ("FILES_TOKEN", "f"),
        ("TICKETS_TOKEN", "t"),
    ];
    let c = load(Some(&uncommented), &vars).unwrap_or_else(|e| panic!("{e}"));
    let mcp: Vec<&str> = c.mcp.iter().map(|m| m.transport()).collect();
    assert_eq!(mcp, ["stdio", "http"]);
    assert_eq!(c.default_model, "openai");
    assert_eq!(c.models.len(), 8);
    assert_eq!(c.tools.http.len(), 1);
    let kinds: Vec<&str> = c.hooks.iter().map(|h| h.kind.as_str()).collect();
    assert_eq!(kinds, HOOK_KINDS);
    assert!(c.auth.enabled());
    assert_eq!(c.react.compact_model.as_deref(), Some("llamacpp"));
    assert_eq!(c.agents.len(), 1);
    assert_eq!(c.agents[0].name, "researcher");
    assert_eq!(c.budgets.len(), 2);
    let priced: Vec<&str> = c
        .models
        .iter()
        .filter(|m| m.price.is_some())
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(priced, ["openai", "deepseek", "gemini"]);
    assert_eq!(c.server.max_active_runs_per_tenant, Some(10));
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
