//! `[llm]` (shared by every model) and `[[models]]` entries with their defaults.

use serde::{Deserialize, Deserializer};

use super::Secret;
use crate::config::{DEFAULT_BASE_URL, DEFAULT_MODEL};
use crate::domain::{Abilities, Price, Sampling, SynthesisPolicy, DEFAULT_LLM_MAX_RESPONSE_BYTES};

/// `[llm]`: settings shared by every model.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmConfig {
    /// `LLM_TIMEOUT_S`: per-call timeout.
    pub timeout_s: u64,
    /// `LLM_MAX_RETRIES`: retries on 429/5xx/connect errors.
    pub max_retries: u32,
    /// `LLM_MAX_RESPONSE_BYTES`: the most one model response may send (a non-streamed body,
    /// or a whole stream), so a broken or hostile provider cannot exhaust memory.
    pub max_response_bytes: usize,
    /// `LLM_HTTP2`: HTTP/2 to the providers, so concurrent calls share one connection: with
    /// prior knowledge (h2c) to `http://` base URLs, by ALPN to `https://`. Off: HTTP/1.1.
    pub http2: bool,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            timeout_s: 120,
            max_retries: 3,
            max_response_bytes: DEFAULT_LLM_MAX_RESPONSE_BYTES,
            http2: false,
        }
    }
}

/// One `[[models]]` entry, resolved (key looked up, defaults applied).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The name clients use (`model` in requests, `GET /api/models`).
    pub name: String,
    #[serde(default = "default_base_url")]
    pub base_url: String,
    /// The environment variable holding this model's key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The provider's model name; defaults to `name`.
    #[serde(default)]
    pub model: String,
    /// Missing abilities default to `true`.
    #[serde(default, deserialize_with = "partial_abilities")]
    pub abilities: Abilities,
    #[serde(default = "default_context_window")]
    pub context_window: u32,
    #[serde(default = "default_max_output_tokens")]
    pub max_output_tokens: u32,
    /// Free-form notes for users choosing a model ("fast", "vision"...).
    #[serde(default)]
    pub hints: Vec<String>,
    /// What DAG steps may ask this model for by `model_hint` (: `fast`, `reasoning`…).
    #[serde(default)]
    pub roles: Vec<String>,
    #[serde(default)]
    pub default: bool,
    /// When runs on this model end with a synthesis call that writes the answer from the trace
    /// (docs/configuration.md): `auto` (a reply that passes the answer checks is the answer),
    /// `always`, or `never` (the loop's reply, or the tools' results); `true`/`false` read as
    /// `always`/`never`. An agent's own setting wins.
    #[serde(default)]
    pub synthesis: SynthesisPolicy,
    /// Sent in every request to this model when set, never when unset (the provider's default
    /// then holds); an agent's own values win. 0 to 2.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// In (0, 1].
    #[serde(default)]
    pub top_p: Option<f32>,
    #[serde(default)]
    pub seed: Option<u64>,
    /// The protocol the provider speaks: OpenAI Chat Completions or Anthropic Messages.
    #[serde(default)]
    pub api: Api,
    /// `thinking = { budget_tokens = N }`: Anthropic extended thinking with this budget.
    #[serde(default)]
    pub thinking: Option<Thinking>,
    /// Anthropic prompt caching: `cache_control` breakpoints on tools, system and last message.
    #[serde(default = "default_cache")]
    pub cache: bool,
    /// USD per million tokens (docs/configuration.md); absent: the cost of its calls is
    /// unknown, counted as 0 and marked, never guessed.
    #[serde(default)]
    pub price: Option<Price>,
    /// Looked up at load time; never read from the file.
    #[serde(skip)]
    pub api_key: Option<Secret>,
    /// The demo model of `serve --demo` (scripted, in-process); never read from the file.
    #[serde(skip)]
    pub demo: bool,
}

impl ModelConfig {
    /// A model with the docs/configuration.md defaults.
    pub fn new(name: impl Into<String>) -> Self {
        let name = name.into();
        Self {
            model: DEFAULT_MODEL.into(),
            name,
            base_url: DEFAULT_BASE_URL.into(),
            api_key_env: None,
            abilities: Abilities::default(),
            context_window: default_context_window(),
            max_output_tokens: default_max_output_tokens(),
            hints: Vec::new(),
            roles: Vec::new(),
            default: false,
            synthesis: SynthesisPolicy::default(),
            temperature: None,
            top_p: None,
            seed: None,
            api: Api::default(),
            thinking: None,
            cache: true,
            price: None,
            api_key: None,
            demo: false,
        }
    }

    /// `temperature`, `top_p` and `seed` together.
    pub fn sampling(&self) -> Sampling {
        Sampling {
            temperature: self.temperature,
            top_p: self.top_p,
            seed: self.seed,
        }
    }
}

/// `[[models]] api`: the wire protocol of the model's provider.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// `POST {base_url}/chat/completions` (OpenAI and every compatible server).
    #[default]
    OpenaiChat,
    /// `POST {base_url}/v1/messages` (Anthropic, llama.cpp, Ollama, vLLM…).
    AnthropicMessages,
}

/// `[[models]] thinking`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thinking {
    /// Tokens the model may think with, part of its output tokens (at least 1024).
    pub budget_tokens: u32,
}

fn default_cache() -> bool {
    true
}
fn default_base_url() -> String {
    DEFAULT_BASE_URL.into()
}
fn default_context_window() -> u32 {
    128_000
}
fn default_max_output_tokens() -> u32 {
    4_096
}

/// `abilities = { tool_call = false }` leaves the other abilities at `true` (but `json_schema`,
/// which is off unless set).
fn partial_abilities<'de, D: Deserializer<'de>>(d: D) -> Result<Abilities, D::Error> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Partial {
        tool_call: Option<bool>,
        json_mode: Option<bool>,
        tool_choice: Option<bool>,
        vision: Option<bool>,
        json_schema: Option<bool>,
    }
    let p = Partial::deserialize(d)?;
    Ok(Abilities {
        tool_call: p.tool_call.unwrap_or(true),
        json_mode: p.json_mode.unwrap_or(true),
        tool_choice: p.tool_choice.unwrap_or(true),
        vision: p.vision.unwrap_or(true),
        json_schema: p.json_schema.unwrap_or(false),
    })
}
