//! Resolves the model list: picks the default model, applies the `LLM_*` variables and looks up
//! every model's key.
//!
//! - No `[[models]]`: one model named `default` is built from the `LLM_*` variables (with the
//!   docs/configuration.md defaults).
//! - With `[[models]]`: the `LLM_*` variables override the fields of the *default* model only,
//!   so `LLM_MODEL=gpt-4o reagent serve` switches the default without editing the file.
//! - Keys: the variable named by `api_key_env`; for the default model, `LLM_API_KEY` then
//!   `OPENAI_API_KEY` when that is absent or unset. A model without a key is allowed (local
//!   servers often need none).

use std::collections::HashMap;

use super::env::{boolean, get, int};
use super::{
    validate, Api, ConfigError, ModelConfig, Secret, DEFAULT_ANTHROPIC_BASE_URL, DEFAULT_BASE_URL,
    DEFAULT_MODEL_NAME,
};
use crate::domain::SynthesisPolicy;

/// Returns the resolved models (exactly one flagged `default`) and the default's name.
pub(super) fn resolve(
    mut models: Vec<ModelConfig>,
    default_model: Option<&str>,
    env: &HashMap<String, String>,
) -> Result<(Vec<ModelConfig>, String), ConfigError> {
    let synthesized = models.is_empty();
    if synthesized {
        models.push(ModelConfig::new(DEFAULT_MODEL_NAME));
    }
    for m in &mut models {
        if m.model.is_empty() {
            m.model = m.name.clone();
        }
        anthropic_defaults(m);
    }
    let index = default_index(&models, default_model)?;
    for (i, m) in models.iter_mut().enumerate() {
        m.default = i == index;
    }
    override_from_env(&mut models[index], env)?;
    for m in &mut models {
        m.api_key = key_for(m, env);
    }
    check_limits(&models, synthesized)?;
    let name = models[index].name.clone();
    Ok((models, name))
}

/// `default_model`, else the entry with `default = true`, else the first entry.
fn default_index(
    models: &[ModelConfig],
    default_model: Option<&str>,
) -> Result<usize, ConfigError> {
    let flagged: Vec<usize> = (0..models.len()).filter(|&i| models[i].default).collect();
    if let [first, second, ..] = flagged[..] {
        return Err(ConfigError::invalid(
            format!("models[{second}].default"),
            format!(
                "only one model can be the default, and models[{first}] (\"{}\") already is",
                models[first].name
            ),
        ));
    }
    let Some(wanted) = default_model else {
        return Ok(flagged.first().copied().unwrap_or(0));
    };
    let Some(index) = models.iter().position(|m| m.name == wanted) else {
        let known: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
        return Err(ConfigError::invalid(
            "default_model",
            format!(
                "{wanted:?} is not a configured model (known: {})",
                known.join(", ")
            ),
        ));
    };
    match flagged.first() {
        Some(&f) if f != index => Err(ConfigError::invalid(
            "default_model",
            format!(
                "{wanted:?} disagrees with models[{f}].default = true (\"{}\")",
                models[f].name
            ),
        )),
        _ => Ok(index),
    }
}

/// An Anthropic Messages model's defaults: Anthropic's URL (rather than OpenAI's) and key
/// variable, and no JSON mode (the API has none).
fn anthropic_defaults(m: &mut ModelConfig) {
    if m.api != Api::AnthropicMessages {
        return;
    }
    if m.base_url == DEFAULT_BASE_URL {
        m.base_url = DEFAULT_ANTHROPIC_BASE_URL.into();
    }
    if m.api_key_env.is_none() {
        m.api_key_env = Some("ANTHROPIC_API_KEY".into());
    }
    m.abilities.json_mode = false;
    m.abilities.json_schema = false;
}

fn override_from_env(
    m: &mut ModelConfig,
    env: &HashMap<String, String>,
) -> Result<(), ConfigError> {
    if let Some(raw) = get(env, "LLM_BASE_URL") {
        validate::http_url("LLM_BASE_URL", raw)?;
        m.base_url = raw.to_string();
    }
    if let Some(raw) = get(env, "LLM_MODEL") {
        m.model = raw.to_string();
    }
    if let Some(v) = boolean(env, "LLM_TOOL_CALL")? {
        m.abilities.tool_call = v;
    }
    if let Some(v) = boolean(env, "LLM_JSON_MODE")? {
        m.abilities.json_mode = v;
    }
    if let Some(v) = boolean(env, "LLM_JSON_SCHEMA")? {
        m.abilities.json_schema = v;
    }
    if let Some(v) = boolean(env, "LLM_TOOL_CHOICE")? {
        m.abilities.tool_choice = v;
    }
    if let Some(v) = int(env, "LLM_CONTEXT_WINDOW", 1)? {
        m.context_window = v;
    }
    if let Some(v) = int(env, "LLM_MAX_OUTPUT_TOKENS", 1)? {
        m.max_output_tokens = v;
    }
    if let Some(raw) = get(env, "LLM_SYNTHESIS") {
        m.synthesis = match raw {
            "true" => SynthesisPolicy::Always,
            "false" => SynthesisPolicy::Never,
            other => other.parse().map_err(|_| {
                ConfigError::value("LLM_SYNTHESIS", raw, "expected auto, always or never")
            })?,
        };
    }
    sampling_from_env(m, env)
}

/// `LLM_TEMPERATURE`, `LLM_TOP_P`, `LLM_SEED`, each checked under its own name.
fn sampling_from_env(
    m: &mut ModelConfig,
    env: &HashMap<String, String>,
) -> Result<(), ConfigError> {
    let mut s = m.sampling();
    for (var, slot) in [
        ("LLM_TEMPERATURE", &mut s.temperature),
        ("LLM_TOP_P", &mut s.top_p),
    ] {
        if let Some(raw) = get(env, var) {
            *slot = Some(
                raw.parse()
                    .map_err(|_| ConfigError::value(var, raw, "expected a number"))?,
            );
        }
    }
    if let Some(v) = int(env, "LLM_SEED", 0u64)? {
        s.seed = Some(v);
    }
    if let Some((field, _, expected)) = s.invalid() {
        let var = format!("LLM_{}", field.to_ascii_uppercase());
        let raw = get(env, &var).unwrap_or_default();
        return Err(ConfigError::value(var, raw, expected));
    }
    (m.temperature, m.top_p, m.seed) = (s.temperature, s.top_p, s.seed);
    Ok(())
}

fn key_for(m: &ModelConfig, env: &HashMap<String, String>) -> Option<Secret> {
    let own = m.api_key_env.as_deref().and_then(|var| get(env, var));
    let fallback = || {
        m.default
            .then(|| get(env, "LLM_API_KEY").or_else(|| get(env, "OPENAI_API_KEY")))
            .flatten()
    };
    own.or_else(fallback).map(Secret::new)
}

/// The sampling settings must be in range; the output reservation must leave room for a prompt.
fn check_limits(models: &[ModelConfig], synthesized: bool) -> Result<(), ConfigError> {
    for (i, m) in models.iter().enumerate() {
        if let Some((field, value, expected)) = m.sampling().invalid() {
            let key = format!("models[{i}].{field}");
            return Err(ConfigError::value(key, value, expected));
        }
        if m.max_output_tokens >= m.context_window {
            let key = if synthesized {
                "LLM_MAX_OUTPUT_TOKENS".to_string()
            } else {
                format!("models[{i}].max_output_tokens")
            };
            return Err(ConfigError::invalid(
                key,
                format!(
                    "{} must be smaller than the context window {} of model {:?}",
                    m.max_output_tokens, m.context_window, m.name
                ),
            ));
        }
    }
    Ok(())
}
