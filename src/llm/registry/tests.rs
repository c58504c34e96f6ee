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
        roles: vec![],
        default: false,
        needs_key: false,
        demo: false,
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
