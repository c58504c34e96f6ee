use std::collections::HashMap;

use super::*;
use crate::testing::ScriptedLlm;

fn info(name: &str, model: &str) -> ModelInfo {
    ModelInfo {
        name: name.into(),
        model: model.into(),
        abilities: Abilities::default(),
        context_window: 1000,
        max_output_tokens: 100,
        hints: vec!["fast".into()],
        default: false,
    }
}

fn fake() -> Arc<dyn Llm> {
    Arc::new(ScriptedLlm::native())
}

#[test]
fn from_llms_sets_the_default_and_looks_up_by_name() {
    let reg = ModelRegistry::from_llms(
        vec![(info("a", "m-a"), fake()), (info("b", "m-b"), fake())],
        "b",
    )
    .unwrap();
    assert_eq!(reg.default_name(), "b");
    assert_eq!(reg.len(), 2);
    assert!(reg.get("a").is_some() && reg.get("zz").is_none());
    let defaults: Vec<bool> = reg.infos().iter().map(|i| i.default).collect();
    assert_eq!(defaults, [false, true]);
    assert_eq!(reg.resolve(None).unwrap().0.name, "b");
    assert_eq!(reg.resolve(Some("a")).unwrap().0.model, "m-a");
    assert!(reg.resolve(Some("zz")).is_none());
    assert!(Arc::ptr_eq(&reg.default_llm(), &reg.get("b").unwrap()));
}

#[test]
fn from_llms_rejects_duplicates_and_unknown_default() {
    let dup = ModelRegistry::from_llms(
        vec![(info("a", "x"), fake()), (info("a", "y"), fake())],
        "a",
    );
    assert!(dup
        .unwrap_err()
        .to_string()
        .contains("duplicate model name \"a\""));
    let unknown = ModelRegistry::from_llms(vec![(info("a", "x"), fake())], "b");
    assert!(unknown
        .unwrap_err()
        .to_string()
        .starts_with("default_model"));
    let empty = ModelRegistry::from_llms(Vec::new(), "a");
    assert!(empty.is_err());
}

#[test]
fn from_config_builds_one_client_per_model() {
    let file = "default_model = \"b\"\n[[models]]\nname = \"a\"\nmodel = \"gpt-x\"\n\
                    abilities = { tool_call = false }\n[[models]]\nname = \"b\"\ncontext_window = 64000\n";
    let env = HashMap::from([("LLM_API_KEY".to_string(), "sk-secret".to_string())]);
    let config = Config::load_from(Some(file), &env).unwrap();
    let reg = ModelRegistry::from_config(&config).unwrap();
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
    let reg = ModelRegistry::from_config(&config).unwrap();
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
