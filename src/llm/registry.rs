//! The model registry: one [`Llm`] per configured model, looked up by name when a run starts
//! (: the model is bound once per run). Built by [`ModelRegistry::from_llms`]: from the
//! configuration's clients by the app's assembly (`crate::app`), from fakes in tests. Cloning
//! is cheap: the entries are shared.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;

use super::{Abilities, Llm};

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
    /// The `model_hint`s of DAG steps this model serves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    pub default: bool,
    /// No API key is configured although the provider is not on this machine: its calls will
    /// be refused (the UI shows a hint).
    pub needs_key: bool,
    /// The scripted demo model of `serve --demo`, not a real LLM (the UI says so).
    #[serde(default)]
    pub demo: bool,
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

/// Why a set of models is not a registry: `key` names the configuration entry at fault.
#[derive(Debug, thiserror::Error)]
#[error("{key}: {message}")]
pub struct RegistryError {
    pub key: &'static str,
    pub message: String,
}

impl ModelRegistry {
    /// Any models (fakes in tests). Names must be unique and `default_name` among them; the
    /// `default` flags of the infos are set from `default_name`.
    pub fn from_llms(
        entries: Vec<(ModelInfo, Arc<dyn Llm>)>,
        default_name: &str,
    ) -> Result<Self, RegistryError> {
        let mut entries = entries;
        for (i, (info, _)) in entries.iter().enumerate() {
            if entries[..i]
                .iter()
                .any(|(other, _)| other.name == info.name)
            {
                return Err(RegistryError {
                    key: "models",
                    message: format!("duplicate model name {:?}", info.name),
                });
            }
        }
        let Some(default_index) = entries.iter().position(|(i, _)| i.name == default_name) else {
            return Err(RegistryError {
                key: "default_model",
                message: format!("{default_name:?} is not a configured model"),
            });
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

    /// The first model (in configuration order) whose `roles` include `role`.
    pub fn by_role(&self, role: &str) -> Option<(ModelInfo, Arc<dyn Llm>)> {
        self.inner
            .entries
            .iter()
            .find(|(i, _)| i.roles.iter().any(|r| r == role))
            .cloned()
    }

    /// Every role some model serves, once each, in configuration order.
    pub fn roles(&self) -> Vec<String> {
        let mut roles: Vec<String> = Vec::new();
        for (info, _) in &self.inner.entries {
            for r in &info.roles {
                if !roles.contains(r) {
                    roles.push(r.clone());
                }
            }
        }
        roles
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
mod tests;
