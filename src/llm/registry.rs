//! The model registry: one [`Llm`] per configured model, looked up by name when a run starts
//! (SPEC §2.1: the model is bound once per run). Built from the configuration in production
//! ([`ModelRegistry::from_config`]) or from injected fakes in tests
//! ([`ModelRegistry::from_llms`]). Cloning is cheap: the entries are shared.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::openai::{OpenAiClient, OpenAiConfig};
use super::{Abilities, Llm};
use crate::config::{Config, ConfigError, ModelConfig};

/// What clients may know about a model (`GET /api/models`): no URL, no key.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelInfo {
    /// The name clients pass as `model`.
    pub name: String,
    /// The provider's model name.
    pub model: String,
    pub abilities: Abilities,
    pub context_window: u32,
    pub max_output_tokens: u32,
    pub hints: Vec<String>,
    pub default: bool,
}

impl From<&ModelConfig> for ModelInfo {
    fn from(m: &ModelConfig) -> Self {
        Self {
            name: m.name.clone(),
            model: m.model.clone(),
            abilities: m.abilities,
            context_window: m.context_window,
            max_output_tokens: m.max_output_tokens,
            hints: m.hints.clone(),
            default: m.default,
        }
    }
}

struct Inner {
    entries: Vec<(ModelInfo, Arc<dyn Llm>)>,
    default_index: usize,
}

/// Named models with one default. Never empty.
#[derive(Clone)]
pub struct ModelRegistry {
    inner: Arc<Inner>,
}

impl fmt::Debug for ModelRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelRegistry")
            .field("models", &self.names())
            .field("default", &self.default_name())
            .finish()
    }
}

/// The client settings of one configured model.
pub fn openai_config(model: &ModelConfig, config: &Config) -> OpenAiConfig {
    OpenAiConfig {
        base_url: model.base_url.clone(),
        api_key: model.api_key.as_ref().map(|k| k.expose().to_string()),
        model: model.model.clone(),
        abilities: model.abilities,
        context_window: model.context_window,
        max_output_tokens: model.max_output_tokens,
        timeout: Duration::from_secs(config.llm.timeout_s),
        max_retries: config.llm.max_retries,
    }
}

impl ModelRegistry {
    /// One OpenAI-compatible client per `[[models]]` entry.
    pub fn from_config(config: &Config) -> Result<Self, ConfigError> {
        let mut entries = Vec::with_capacity(config.models.len());
        for m in &config.models {
            let client = OpenAiClient::new(openai_config(m, config))
                .map_err(|e| {
                    ConfigError::invalid(
                        format!("model {:?}", m.name),
                        format!("cannot build its client: {e}"),
                    )
                })?
                .with_max_response_bytes(config.llm.max_response_bytes);
            entries.push((ModelInfo::from(m), Arc::new(client) as Arc<dyn Llm>));
        }
        Self::from_llms(entries, &config.default_model)
    }

    /// Any models (fakes in tests). Names must be unique and `default_name` among them; the
    /// `default` flags of the infos are set from `default_name`.
    pub fn from_llms(
        entries: Vec<(ModelInfo, Arc<dyn Llm>)>,
        default_name: &str,
    ) -> Result<Self, ConfigError> {
        let mut entries = entries;
        for (i, (info, _)) in entries.iter().enumerate() {
            if entries[..i]
                .iter()
                .any(|(other, _)| other.name == info.name)
            {
                return Err(ConfigError::invalid(
                    "models",
                    format!("duplicate model name {:?}", info.name),
                ));
            }
        }
        let Some(default_index) = entries.iter().position(|(i, _)| i.name == default_name) else {
            return Err(ConfigError::invalid(
                "default_model",
                format!("{default_name:?} is not a configured model"),
            ));
        };
        for (i, (info, _)) in entries.iter_mut().enumerate() {
            info.default = i == default_index;
        }
        Ok(Self {
            inner: Arc::new(Inner {
                entries,
                default_index,
            }),
        })
    }

    /// A single model, which is the default (handy for tests).
    pub fn single(mut info: ModelInfo, llm: Arc<dyn Llm>) -> Self {
        info.default = true;
        Self {
            inner: Arc::new(Inner {
                entries: vec![(info, llm)],
                default_index: 0,
            }),
        }
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Llm>> {
        self.entry(name).map(|(_, llm)| llm.clone())
    }

    /// The named model, or the default one when `name` is `None`; `None` for an unknown name
    /// (the API answers 400 rather than silently using another model).
    pub fn resolve(&self, name: Option<&str>) -> Option<(ModelInfo, Arc<dyn Llm>)> {
        match name {
            Some(n) => self.entry(n).cloned(),
            None => Some(self.default_entry().clone()),
        }
    }

    pub fn info(&self, name: &str) -> Option<ModelInfo> {
        self.entry(name).map(|(info, _)| info.clone())
    }

    pub fn default_llm(&self) -> Arc<dyn Llm> {
        self.default_entry().1.clone()
    }

    pub fn default_name(&self) -> &str {
        &self.default_entry().0.name
    }

    /// Every model in configuration order.
    pub fn infos(&self) -> Vec<ModelInfo> {
        self.inner.entries.iter().map(|(i, _)| i.clone()).collect()
    }

    pub fn names(&self) -> Vec<&str> {
        self.inner
            .entries
            .iter()
            .map(|(i, _)| i.name.as_str())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.inner.entries.len()
    }

    /// Always false: a registry holds at least its default model.
    pub fn is_empty(&self) -> bool {
        self.inner.entries.is_empty()
    }

    fn entry(&self, name: &str) -> Option<&(ModelInfo, Arc<dyn Llm>)> {
        self.inner.entries.iter().find(|(i, _)| i.name == name)
    }

    fn default_entry(&self) -> &(ModelInfo, Arc<dyn Llm>) {
        // In bounds: `default_index` was found by `position` in these very entries.
        &self.inner.entries[self.inner.default_index]
    }
}

#[cfg(test)]
mod tests {
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
}
