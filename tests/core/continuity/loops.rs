//! The tool loop against a thinking model: three tool iterations, non-streamed and streamed,
//! across a resume, and a switch to another model.

use reagent::agent::checkpoint::Resume;
use reagent::agent::RunStatus;
use reagent::llm::{collect_stream, ChatRequest, ToolDefinition};

use super::*;

/// No checklist: exactly one loop call per scripted reply.
fn config() -> AgentConfig {
    AgentConfig {
        completion_check: false,
        ..AgentConfig::default()
    }
}

/// Three tool-call turns of `kind`, then the answer.
fn script(fake: &FakeOpenAi, kind: Kind) {
    for n in 1..=3 {
        fake.push(turn(kind, n));
    }
    fake.push(FakeReply::text("all three found"));
}

/// Assistant messages of `request` that carry continuity.
fn with_continuity(request: &Value) -> usize {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .filter(|m| m["role"] == "assistant" && carries_continuity(&json!({"messages": [m]})))
        .count()
}

async fn the_loop_completes(kind: Kind) {
    let fake = thinking().await;
    script(&fake, kind);
    let llm = client(&fake, "thinker", "deepseek-reasoner");
    let result = agent(llm, config())
        .run(input(vec![]), handles(Arc::default()))
        .await;
    assert_eq!(
        (result.outcome.status, result.outcome.tool_calls),
        (RunStatus::Completed, 3),
        "{:?}",
        result.outcome.error
    );
    // Each loop call gives back every earlier turn (the fifth request is the answer's synthesis).
    let sent: Vec<usize> = requests_to(&fake, "deepseek-reasoner")
        .iter()
        .take(4)
        .map(with_continuity)
        .collect();
    assert_eq!(sent, [0, 1, 2, 3]);
}

#[tokio::test]
async fn deepseek_reasoning_goes_back_through_three_tool_iterations() {
    the_loop_completes(Kind::DeepSeek).await;
}

#[tokio::test]
async fn gemini_thought_signatures_go_back_through_three_tool_iterations() {
    the_loop_completes(Kind::Gemini).await;
}

/// The same three turns through the client's stream, the history kept as the loop keeps it.
async fn the_streamed_loop_completes(kind: Kind) {
    let fake = thinking().await;
    script(&fake, kind);
    let llm = client(&fake, "thinker", "deepseek-reasoner");
    let lookup = ToolDefinition {
        name: "lookup".into(),
        description: "Looks things up.".into(),
        parameters: json!({"type": "object", "properties": {"x": {"type": "string"}}}),
    };
    let mut messages = vec![Message::system("You look things up."), Message::user("q")];
    let mut answer = String::new();
    for _ in 0..4 {
        let request = ChatRequest {
            tools: vec![lookup.clone()].into(),
            ..ChatRequest::new(messages.clone())
        };
        let stream = llm.stream_chat(request).await.expect("accepted");
        let reply = collect_stream(stream).await.expect("a complete reply");
        messages.push(Message::from_response(&reply));
        for call in &reply.tool_calls {
            messages.push(Message::tool(call.id.clone(), "found it"));
        }
        answer = reply.content;
    }
    assert_eq!(answer, "all three found");
    let sent: Vec<usize> = fake.requests().iter().map(with_continuity).collect();
    assert_eq!(sent, [0, 1, 2, 3]);
}

#[tokio::test]
async fn deepseek_reasoning_streamed_goes_back_through_three_tool_iterations() {
    the_streamed_loop_completes(Kind::DeepSeek).await;
}

#[tokio::test]
async fn gemini_thought_signatures_streamed_go_back_through_three_tool_iterations() {
    the_streamed_loop_completes(Kind::Gemini).await;
}

/// A run resumed (by another instance) from the checkpoint taken before its third iteration.
async fn a_resumed_run_gives_them_back(kind: Kind) {
    let fake = thinking().await;
    script(&fake, kind);
    let taken = Arc::new(Mutex::new(Vec::new()));
    let first = agent(client(&fake, "thinker", "deepseek-reasoner"), config())
        .run(input(vec![]), handles(taken.clone()))
        .await;
    assert_eq!(first.outcome.status, RunStatus::Completed);
    let checkpoint = taken
        .lock()
        .unwrap()
        .iter()
        .find(|c| c.iterations == 2 && c.in_flight.is_empty())
        .cloned()
        .expect("the checkpoint before the third iteration");
    fake.push(turn(kind, 13));
    fake.push(FakeReply::text("found again"));
    let before = fake.request_count();
    let resume = Resume {
        checkpoint,
        reset_answer: false,
        continues: None,
    };
    let resumed = agent(client(&fake, "thinker", "deepseek-reasoner"), config())
        .resume(input(vec![]), handles(Arc::default()), resume, "node-b")
        .await;
    assert_eq!(
        (resumed.outcome.status, resumed.outcome.tool_calls),
        (RunStatus::Completed, 3),
        "{:?}",
        resumed.outcome.error
    );
    let sent: Vec<usize> = fake.requests()[before..]
        .iter()
        .take(2)
        .map(with_continuity)
        .collect();
    assert_eq!(
        sent,
        [2, 3],
        "both turns from before the restart, then the third"
    );
}

#[tokio::test]
async fn deepseek_reasoning_survives_a_resume_from_a_checkpoint() {
    a_resumed_run_gives_them_back(Kind::DeepSeek).await;
}

#[tokio::test]
async fn gemini_thought_signatures_survive_a_resume_from_a_checkpoint() {
    a_resumed_run_gives_them_back(Kind::Gemini).await;
}

#[tokio::test]
async fn another_model_gets_the_plain_messages_and_the_same_model_them_again() {
    let fake = thinking().await;
    fake.push(turn(Kind::Gemini, 1));
    fake.push(turn(Kind::DeepSeek, 2));
    fake.push(FakeReply::text("both found"));
    let first = agent(client(&fake, "thinker", "deepseek-reasoner"), config())
        .run(input(vec![]), handles(Arc::default()))
        .await;
    assert_eq!(first.outcome.status, RunStatus::Completed);
    // The next run of the conversation, with this run's turns as its history.
    let history: Vec<Message> = first.messages[1..].to_vec();
    assert_eq!(history.iter().filter(|m| m.continuity.is_some()).count(), 2);

    fake.push(FakeReply::text("plain"));
    let other = agent(client(&fake, "other", "plain-model"), config())
        .run(input(history.clone()), handles(Arc::default()))
        .await;
    assert_eq!(other.outcome.status, RunStatus::Completed);
    let to_other = requests_to(&fake, "plain-model");
    assert!(!to_other.is_empty());
    assert!(
        to_other.iter().all(|r| !carries_continuity(r)),
        "{to_other:?}"
    );
    // Its own turns carry nothing the other provider did not send.
    assert!(other
        .messages
        .iter()
        .all(|m| m.continuity.is_none()
            || m.continuity.as_ref().is_some_and(|c| c.model == "thinker")));

    fake.push(FakeReply::text("again"));
    let before = fake.request_count();
    let again = agent(client(&fake, "thinker", "deepseek-reasoner"), config())
        .run(input(history), handles(Arc::default()))
        .await;
    assert_eq!(again.outcome.status, RunStatus::Completed);
    assert_eq!(with_continuity(&fake.requests()[before]), 2);
}

/// The fake refuses what real providers refuse: a turn given back altered, or without what
/// came with it (so the tests above prove the replay, not the fake's leniency).
#[tokio::test]
async fn the_fake_refuses_an_altered_or_missing_reasoning_or_signature() {
    use reagent::llm::LlmError;
    for (kind, field) in [
        (Kind::DeepSeek, "reasoning_content"),
        (Kind::Gemini, "extra_content"),
    ] {
        let fake = thinking().await;
        fake.push(turn(kind, 1));
        let llm = client(&fake, "thinker", "deepseek-reasoner");
        let mut messages = vec![Message::user("q")];
        let reply = llm
            .chat(ChatRequest::new(messages.clone()))
            .await
            .expect("a turn");
        messages.push(Message::from_response(&reply));
        messages.push(Message::tool("c1", "found it"));
        let good = messages.clone();
        let turn_at = 1;
        // Altered: one character more in the kept value.
        let mut continuity = messages[turn_at].continuity.clone().expect("kept");
        let kept = match kind {
            Kind::DeepSeek => continuity.message.get_mut(field),
            Kind::Gemini => continuity.tool_calls[0].get_mut(field),
        };
        let kept = kept.expect("the field");
        *kept = json!(format!("{kept}x"));
        messages[turn_at].continuity = Some(continuity);
        let altered = llm.chat(ChatRequest::new(messages.clone())).await;
        assert!(
            matches!(altered, Err(LlmError::Status { status: 400, .. })),
            "{altered:?}"
        );
        // Missing.
        messages[turn_at].continuity = None;
        let missing = llm.chat(ChatRequest::new(messages)).await;
        assert!(
            matches!(missing, Err(LlmError::Status { status: 400, .. })),
            "{missing:?}"
        );
        // As sent.
        assert!(llm.chat(ChatRequest::new(good)).await.is_ok());
    }
}

/// Compaction by another model (`compact_model`): its summary call never carries the thinking
/// model's continuity, and the turns the compaction keeps still carry theirs (the thinking
/// provider accepts every later call).
#[tokio::test]
async fn a_compaction_model_never_gets_them_and_the_kept_turns_keep_them() {
    let fake = thinking().await;
    for n in 1..=5 {
        fake.push(turn(Kind::DeepSeek, n));
    }
    fake.push(FakeReply::text("all found"));
    let summariser = FakeOpenAi::start().await.expect("fake server starts");
    summariser.set_default(FakeReply::text("summary of earlier work"));
    let config = AgentConfig {
        context_budget_tokens: Some(3_000),
        completion_check: false,
        ..AgentConfig::default()
    };
    // About 1,000 tokens per result: the history outgrows the budget after a few turns.
    let big = registry(vec![FakeTool::new("lookup", &"word ".repeat(800))]);
    let result = ReActAgent::new(
        client(&fake, "thinker", "deepseek-reasoner"),
        big,
        HookRunner::default(),
        config,
    )
    .with_compact_llm(client(&summariser, "other", "plain-model"))
    .run(input(vec![]), handles(Arc::default()))
    .await;
    assert_eq!(
        (result.outcome.status, result.outcome.tool_calls),
        (RunStatus::Completed, 5),
        "{:?}",
        result.outcome.error
    );
    let summaries = summariser.requests();
    assert!(!summaries.is_empty(), "the history was compacted");
    assert!(summaries.iter().all(|r| !carries_continuity(r)));
}
