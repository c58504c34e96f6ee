//! The demo model of `reagent serve --demo`: one model, `demo`, served by the scripted mock
//! provider inside the process, in place of every configured model, so that a first run needs
//! no key and no network. Everything about it says it is not a real model: its name, its hint
//! (shown by the UI), and the start-up log.

use std::collections::HashMap;

use super::env::get;
use super::{Config, ModelConfig, DEFAULT_MODEL_NAME};
use crate::domain::Abilities;

/// The demo model's name (`GET /api/models`, the `model` of runs).
pub const DEMO_MODEL_NAME: &str = "demo";
/// What the UI and the log say about it.
pub const DEMO_NOTICE: &str = "Demo model: scripted answers, no real LLM";
/// The variables `--demo` overrides: set, they are ignored, and start-up says so.
const MODEL_VARIABLES: [&str; 4] = ["LLM_BASE_URL", "LLM_API_KEY", "OPENAI_API_KEY", "LLM_MODEL"];

impl Config {
    /// Replaces every model with the demo model at `base_url` (the in-process mock provider)
    /// and points the agents and the compaction model at it, so no run can reach a provider.
    /// Returns what it overrode, for the start-up log.
    pub fn use_demo_model(&mut self, base_url: &str, env: &HashMap<String, String>) -> Vec<String> {
        let mut notes = Vec::new();
        let ignored: Vec<&str> = MODEL_VARIABLES
            .into_iter()
            .filter(|v| get(env, v).is_some())
            .collect();
        if !ignored.is_empty() {
            notes.push(format!(
                "--demo: {} set but ignored, the demo model answers every run",
                ignored.join(", ")
            ));
        }
        // The model built from the `LLM_*` variables is covered by the note above.
        let configured: Vec<&str> = self
            .models
            .iter()
            .filter(|m| !m.demo && m.name != DEFAULT_MODEL_NAME)
            .map(|m| m.name.as_str())
            .collect();
        if !configured.is_empty() {
            notes.push(format!(
                "--demo: the configured models ({}) are not used",
                configured.join(", ")
            ));
        }
        for agent in &mut self.agents {
            if let Some(model) = agent.model.take() {
                notes.push(format!(
                    "--demo: agent {:?} uses the demo model instead of {model:?}",
                    agent.name
                ));
            }
        }
        self.models = vec![demo_model(base_url)];
        self.default_model = DEMO_MODEL_NAME.to_string();
        self.react.compact_model = None;
        notes
    }
}

fn demo_model(base_url: &str) -> ModelConfig {
    ModelConfig {
        model: DEMO_MODEL_NAME.into(),
        base_url: base_url.into(),
        abilities: Abilities {
            tool_call: true,
            json_mode: true,
            tool_choice: true,
            vision: true,
            json_schema: false,
        },
        hints: vec![DEMO_NOTICE.into()],
        default: true,
        demo: true,
        ..ModelConfig::new(DEMO_MODEL_NAME)
    }
}
