//! The assembly from configuration: model clients as configured, secrets kept out of what
//! clients see.

use std::collections::HashMap;
use std::time::Duration;

use super::setup::{client_config, key_warning, model_registry, open_bind_warning};
use crate::config::Config;

#[test]
fn from_config_builds_one_client_per_model() {
    let file = "default_model = \"b\"\n[[models]]\nname = \"a\"\nmodel = \"gpt-x\"\n\
                abilities = { tool_call = false }\n[[models]]\nname = \"b\"\ncontext_window = 64000\n";
    let env = HashMap::from([("LLM_API_KEY".to_string(), "sk-secret".to_string())]);
    let config = Config::load_from(Some(file), &env).unwrap();
    let reg = model_registry(&config).unwrap();
    assert_eq!(reg.names(), ["a", "b"]);
    assert_eq!(reg.default_name(), "b");
    let a = reg.get("a").unwrap();
    assert_eq!(a.model(), "gpt-x");
    assert!(!a.abilities().tool_call);
    assert_eq!(reg.default_llm().context_window(), 64_000);
    let client = client_config(&config.models[1], &config);
    assert_eq!(client.api_key.as_deref(), Some("sk-secret"));
    assert_eq!(client.timeout, Duration::from_secs(120));
}

#[test]
fn infos_serialize_without_secrets() {
    let env = HashMap::from([
        ("LLM_API_KEY".to_string(), "sk-secret".to_string()),
        (
            "LLM_BASE_URL".to_string(),
            "http://internal.example:8000/v1".to_string(),
        ),
    ]);
    let config = Config::load_from(None, &env).unwrap();
    let reg = model_registry(&config).unwrap();
    let json = serde_json::to_value(reg.infos()).unwrap();
    assert_eq!(json[0]["name"], "default");
    assert_eq!(json[0]["model"], "gpt-4o-mini");
    assert_eq!(json[0]["default"], true);
    assert_eq!(json[0]["context_window"], 128_000);
    assert_eq!(json[0]["abilities"]["tool_call"], true);
    assert_eq!(json[0]["needs_key"], false, "a key is set");
    let text = json.to_string();
    assert!(
        !text.contains("sk-secret") && !text.contains("internal.example"),
        "{text}"
    );
}

#[test]
fn start_up_warns_about_a_missing_key_only_for_a_remote_default_model() {
    let load = |pairs: &[(&str, &str)]| {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::load_from(None, &env).unwrap()
    };
    let warning = key_warning(&load(&[])).expect("api.openai.com without a key");
    assert!(warning.contains("LLM_API_KEY"), "{warning}");
    assert!(warning.contains("https://api.openai.com/v1"), "{warning}");
    assert_eq!(key_warning(&load(&[("LLM_API_KEY", "sk-x")])), None);
    for local in [
        "http://127.0.0.1:8081/v1",
        "http://localhost:11434/v1",
        "http://[::1]:8000/v1",
        "http://192.168.1.5:8000/v1",
    ] {
        assert_eq!(
            key_warning(&load(&[("LLM_BASE_URL", local)])),
            None,
            "{local}"
        );
    }
    let remote = key_warning(&load(&[("LLM_BASE_URL", "https://example.com/v1")]));
    assert!(remote.is_some());
}

/// Issue 51, item 6: an address others can reach, with no API key, is everyone's agent.
#[test]
fn start_up_warns_about_a_reachable_address_without_api_keys() {
    let load = |pairs: &[(&str, &str)]| {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::load_from(None, &env).unwrap()
    };
    for open in ["0.0.0.0:8080", "[::]:8080", "192.168.1.5:80"] {
        let warning = open_bind_warning(&load(&[("REAGENT_BIND", open)]))
            .unwrap_or_else(|| panic!("{open} without keys"));
        assert!(
            warning.contains(open) && warning.contains("REAGENT_API_KEYS"),
            "{warning}"
        );
    }
    for quiet in [
        load(&[("REAGENT_BIND", "127.0.0.1:8080")]),
        load(&[("REAGENT_BIND", "[::1]:8080")]),
        load(&[
            ("REAGENT_BIND", "0.0.0.0:8080"),
            ("REAGENT_API_KEYS", "a:k"),
        ]),
    ] {
        assert_eq!(open_bind_warning(&quiet), None, "{}", quiet.server.bind);
    }
}

#[test]
fn models_say_when_a_remote_default_model_has_no_key() {
    let config = Config::load_from(None, &HashMap::new()).unwrap();
    let json = serde_json::to_value(model_registry(&config).unwrap().infos()).unwrap();
    assert_eq!(json[0]["needs_key"], true, "api.openai.com without a key");
    let env = HashMap::from([(
        "LLM_BASE_URL".to_string(),
        "http://127.0.0.1:8081/v1".to_string(),
    )]);
    let config = Config::load_from(None, &env).unwrap();
    let json = serde_json::to_value(model_registry(&config).unwrap().infos()).unwrap();
    assert_eq!(json[0]["needs_key"], false, "a local server needs none");
}

/// A log sink the test can read back.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_default_log_filter_keeps_rmcp_info_lines_out() {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            super::DEFAULT_LOG_FILTER,
        ))
        .with_writer(move || sink.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        tracing::info!(target: "rmcp::service", "Service initialized as client: pages of instructions");
        tracing::warn!(target: "rmcp::service", "rmcp warning kept");
        tracing::info!(target: "reagent::tools::mcp", "MCP server ready");
    });
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(!log.contains("pages of instructions"), "{log}");
    assert!(
        log.contains("rmcp warning kept") && log.contains("MCP server ready"),
        "{log}"
    );
}
