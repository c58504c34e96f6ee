//! The answer's continuity in the conversation's messages: stored with the answer by the run
//! manager (on both backends), and sent back in the next run of the conversation to the same
//! model only.

use futures::StreamExt;
use reagent::llm::registry::{ModelInfo, ModelRegistry};
use reagent::runs::{ConversationRef, RunManager, RunParts, RunSettings, StartRun};
use reagent::store::{NewConversation, Store};

use super::*;

fn info(name: &str, model: &str) -> ModelInfo {
    ModelInfo {
        name: name.into(),
        model: model.into(),
        abilities: Abilities::default(),
        context_window: 128_000,
        max_output_tokens: 4_096,
        hints: vec![],
        roles: vec![],
        default: false,
        needs_key: false,
        demo: false,
    }
}

/// Runs `query` in `conv` on the registry's model `model` to its end.
async fn run(runs: &Arc<RunManager>, conv: uuid::Uuid, query: &str, model: &str) {
    let mut start = StartRun::new(ConversationRef::Existing(conv), query);
    start.model = Some(model.into());
    let live = runs.start("alice", start).await.expect("the run starts");
    let events: Vec<_> = live.log.subscribe(0).events.collect().await;
    assert!(events.last().is_some_and(|e| e.name == "done"));
}

on_both_backends!(
    #[tokio::test]
    the_answers_reasoning_is_stored_and_sent_back_to_the_same_model_only
);

async fn the_answers_reasoning_is_stored_and_sent_back_to_the_same_model_only(url: String) {
    let fake = thinking().await;
    let store = Store::connect(&url).await.unwrap();
    let models = ModelRegistry::from_llms(
        vec![
            (
                info("thinker", "deepseek-reasoner"),
                client(&fake, "thinker", "deepseek-reasoner"),
            ),
            (
                info("other", "plain-model"),
                client(&fake, "other", "plain-model"),
            ),
        ],
        "thinker",
    )
    .unwrap();
    let config = AgentConfig {
        completion_check: false,
        ..AgentConfig::default()
    };
    let parts = RunParts {
        tools: tools(),
        base: config,
        ..RunParts::new(store.clone(), models)
    };
    let runs = Arc::new(RunManager::new(parts, RunSettings::default()));
    let conv = store
        .create_conversation("alice", NewConversation::default())
        .await
        .unwrap();

    // The loop's reply (streamed, `synthesis = "auto"`) is the answer, with its reasoning.
    fake.push(FakeReply::text("The answer.").reasoning("Why it is the answer."));
    run(&runs, conv.id, "first", "thinker").await;
    let stored = store.list_messages(conv.id).await.unwrap();
    let answer = stored.last().expect("the answer");
    assert_eq!(answer.content, "The answer.");
    let kept = answer.continuity.clone().expect("its continuity is stored");
    assert_eq!(kept.model, "thinker");
    assert_eq!(kept.message["reasoning_content"], "Why it is the answer.");

    let reasoning = |r: &Value| r["messages"].to_string().contains("Why it is the answer.");
    let before = fake.request_count();
    run(&runs, conv.id, "second", "other").await;
    let to_other = &fake.requests()[before];
    assert_eq!(to_other["model"], "plain-model");
    assert!(to_other["messages"].to_string().contains("The answer."));
    assert!(!reasoning(to_other), "another model gets the plain answer");

    let before = fake.request_count();
    run(&runs, conv.id, "third", "thinker").await;
    let to_thinker = &fake.requests()[before];
    assert_eq!(to_thinker["model"], "deepseek-reasoner");
    let first_answer = to_thinker["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["content"] == "The answer."))
        .cloned()
        .unwrap_or_default();
    assert_eq!(first_answer["reasoning_content"], "Why it is the answer.");
}
