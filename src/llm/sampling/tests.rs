//! Sampling settings on the wire, against the fake provider: set on the model, an agent's over
//! its model's, and absent when unset.

use std::collections::HashMap;

use serde_json::Value;

use super::*;
use crate::app::setup::model_registry;
use crate::config::Config;
use crate::llm::{collect_stream, Message};
use crate::testing::fake_openai::FakeOpenAi;

/// Two models on `base_url`, one with sampling settings, and agents over them.
fn config(base_url: &str) -> Config {
    let file = format!(
        r#"
[[models]]
name = "tuned"
base_url = "{base_url}"
temperature = 0.2
top_p = 0.9
seed = 42

[[models]]
name = "plain"
base_url = "{base_url}"
synthesis = "always"

[[agents]]
name = "steady"
model = "tuned"
temperature = 0
seed = 7

[[agents]]
name = "bare"
model = "plain"

[[agents]]
name = "terse"
model = "plain"
synthesis = "never"
"#
    );
    Config::load_from(Some(&file), &HashMap::new()).expect("the configuration loads")
}

/// The sampling keys of the last request the fake received.
fn sent(fake: &FakeOpenAi) -> [Option<Value>; 3] {
    let requests = fake.requests();
    let last = requests.last().cloned().unwrap_or_default();
    ["temperature", "top_p", "seed"].map(|k| last.get(k).cloned())
}

/// One non-streamed and one streamed call of `agent`'s model as its runs make them.
async fn calls(config: &Config, fake: &FakeOpenAi, agent: &str) -> Vec<[Option<Value>; 3]> {
    let spec = config.agent(agent).expect("the agent exists");
    let registry = model_registry(config).expect("the models build");
    let (_, llm) = registry.resolve(spec.model.as_deref()).expect("its model");
    let llm = Sampled::wrap(llm, spec.sampling);
    let request = || ChatRequest::new(vec![Message::user("hi")]);
    let mut out = Vec::new();
    assert!(llm.chat(request()).await.is_ok());
    out.push(sent(fake));
    let stream = llm.stream_chat(request()).await;
    assert!(collect_stream(stream.expect("the stream opens"))
        .await
        .is_ok());
    out.push(sent(fake));
    out
}

#[tokio::test]
async fn a_models_sampling_is_sent_and_an_agents_wins() {
    let fake = FakeOpenAi::start().await.expect("the fake starts");
    let config = config(&fake.base_url());
    let registry = model_registry(&config).expect("the models build");
    let (_, tuned) = registry.resolve(Some("tuned")).expect("tuned");
    assert!(tuned
        .chat(ChatRequest::new(vec![Message::user("hi")]))
        .await
        .is_ok());
    let model_only = [Some(0.2.into()), Some(0.9.into()), Some(42.into())];
    assert_eq!(sent(&fake), model_only);

    // The agent's temperature and seed over the model's; its top_p, unset, is the model's.
    let agent = [Some(0.0.into()), Some(0.9.into()), Some(7.into())];
    assert_eq!(
        calls(&config, &fake, "steady").await,
        vec![agent.clone(), agent]
    );
}

#[tokio::test]
async fn unset_sampling_is_never_sent() {
    let fake = FakeOpenAi::start().await.expect("the fake starts");
    let config = config(&fake.base_url());
    assert_eq!(
        calls(&config, &fake, "bare").await,
        vec![[None, None, None], [None, None, None]]
    );
    let raw = fake.raw_requests();
    let body = String::from_utf8_lossy(raw.last().map(|b| &b[..]).unwrap_or_default());
    assert!(!body.contains("temperature") && !body.contains("top_p") && !body.contains("seed"));
}

#[tokio::test]
async fn an_agents_synthesis_policy_wins_over_its_models() {
    let fake = FakeOpenAi::start().await.expect("the fake starts");
    let config = config(&fake.base_url());
    let registry = model_registry(&config).expect("the models build");
    let policy = |agent: &str| {
        let spec = config.agent(agent).expect("the agent exists");
        let (_, llm) = registry.resolve(spec.model.as_deref()).expect("its model");
        Sampled::agent(llm, spec.sampling, spec.synthesis).synthesis()
    };
    assert_eq!(policy("bare"), SynthesisPolicy::Always, "the model's");
    assert_eq!(policy("terse"), SynthesisPolicy::Never, "the agent's");
    assert_eq!(policy("steady"), SynthesisPolicy::Auto, "the default");
}
