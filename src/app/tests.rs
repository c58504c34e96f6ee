//! The assembly from configuration: model clients as configured, secrets kept out of what
//! clients see.

use std::collections::HashMap;
use std::time::Duration;

use super::setup::{model_registry, openai_config};
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
    let client = openai_config(&config.models[1], &config);
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
    let text = json.to_string();
    assert!(
        !text.contains("sk-secret") && !text.contains("internal.example"),
        "{text}"
    );
}
