//! Images stay in the history (docs/api.md "Images"): a user message keeps them by artifact id
//! or URL, later runs of the conversation send them to the provider again (OpenAI `image_url`,
//! Anthropic `image` base64), a continuation loads them from the checkpoint after a restart,
//! and `GET /api/conversations/{id}` shows them again.

use base64::Engine as _;
use reagent::testing::fake_anthropic::{AnthropicReply, FakeAnthropic};
use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};

use super::*;

on_both_backends!(
    a_reloaded_conversation_shows_its_images,
    a_continuation_after_a_restart_sends_the_image_again,
);

const REMOTE: &str = "https://example.com/cat.jpg";

fn png() -> (String, String) {
    let data = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\n-pixels-");
    (format!("data:image/png;base64,{data}"), data)
}

/// The first run carries a PNG and a remote image; the second asks a follow-up.
async fn two_runs(app: &TestApp) -> String {
    app.llm.text("a cat").text("black");
    let (png, _) = png();
    let conv = app.create_conversation(None).await;
    let body = json!({"query": "what is this?", "images": [{"url": png}, {"url": REMOTE}]});
    let run = app.start_run(&conv, body, None).await;
    assert_eq!(
        app.events(&run, None).await.last().unwrap().data["status"],
        "completed"
    );
    let run = app
        .start_run(&conv, json!({"query": "and the colour?"}), None)
        .await;
    assert_eq!(
        app.events(&run, None).await.last().unwrap().data["status"],
        "completed"
    );
    conv
}

/// The second run's loop call (its synthesis call comes after it, without the history).
fn second_loop_call(requests: Vec<Value>) -> Value {
    requests
        .into_iter()
        .rev()
        .find(|r| {
            let text = r.to_string();
            text.contains("and the colour?") && text.contains("what is this?")
        })
        .expect("the second run's call with the history")
}

/// The one user message of `request` whose text parts say `text` (its content array).
fn user_content(request: &Value, text: &str) -> Value {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .find(|m| m.to_string().contains(text))
        .unwrap_or_else(|| panic!("no user message '{text}' in {request}"))["content"]
        .clone()
}

#[tokio::test]
async fn a_second_run_sends_the_stored_images_to_an_openai_model() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.set_default(FakeReply::text("a cat"));
    let app = TestApp::with(Options {
        env: vec![
            ("LLM_BASE_URL", fake.base_url()),
            ("LLM_API_KEY", "sk-test".into()),
            ("LLM_MODEL", "fake-model".into()),
        ],
        config_models: true,
        ..Options::default()
    })
    .await;
    two_runs(&app).await;
    let (png, _) = png();
    let last = second_loop_call(fake.requests());
    assert_eq!(
        user_content(&last, "what is this?"),
        json!([
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": png}},
            {"type": "image_url", "image_url": {"url": REMOTE}},
        ])
    );
}

#[tokio::test]
async fn a_second_run_sends_the_stored_images_to_an_anthropic_model() {
    let fake = FakeAnthropic::start().await.unwrap();
    fake.set_default(AnthropicReply::text("a cat"));
    let toml = format!(
        "[[models]]\nname = \"claude\"\napi = \"anthropic-messages\"\nbase_url = \"{}\"\n\
         model = \"claude-test\"\ndefault = true\ncache = false\n",
        fake.base_url()
    );
    let app = TestApp::with(Options {
        env: vec![("ANTHROPIC_API_KEY", "sk-ant-test".into())],
        toml,
        config_models: true,
        ..Options::default()
    })
    .await;
    two_runs(&app).await;
    let (_, data) = png();
    let last = second_loop_call(fake.requests());
    assert_eq!(
        user_content(&last, "what is this?"),
        json!([
            {"type": "text", "text": "what is this?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
            {"type": "image", "source": {"type": "url", "url": REMOTE}},
        ])
    );
}

async fn a_reloaded_conversation_shows_its_images(db: String) {
    let app = TestApp::spawn_on(&db).await;
    let conv = two_runs(&app).await;
    let r = app.get(&format!("/api/conversations/{conv}"), None).await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    let messages = body["messages"].as_array().unwrap();
    let images = messages[0]["images"].as_array().unwrap();
    let artifact = images[0]["artifact_id"].as_str().unwrap();
    assert_eq!(
        messages[0]["images"],
        json!([
            {"url": format!("/api/artifacts/{artifact}"), "artifact_id": artifact},
            {"url": REMOTE},
        ])
    );
    assert!(
        messages[1..].iter().all(|m| m.get("images").is_none()),
        "{body}"
    );
    let r = app.get(&format!("/api/artifacts/{artifact}"), None).await;
    assert_eq!(r.headers()["content-type"], "image/png");
    // The messages table holds the artifact id, never the bytes again.
    let (_, data) = png();
    let stored = app
        .app
        .state
        .store
        .list_messages(conv.parse().unwrap())
        .await
        .unwrap();
    assert!(!format!("{stored:?}").contains(&data));
}

/// A run with an image pauses for a caller tool; after a restart its continuation reads the
/// image's bytes back from the artifact (the checkpoint names it by id only).
async fn a_continuation_after_a_restart_sends_the_image_again(db: String) {
    let app = TestApp::spawn_on(&db).await;
    let (png, data) = png();
    app.llm.tool_calls(&[("c1", "confirm", r#"{}"#)]);
    let conv = app.create_conversation(None).await;
    let tools = json!([{"type": "function", "function": {"name": "confirm",
        "parameters": {"type": "object", "properties": {}}}}]);
    let body = json!({"query": "is this ok?", "images": [{"url": png}], "client_tools": tools});
    let run = app.start_run(&conv, body, None).await;
    let done = app.events(&run, None).await.pop().unwrap();
    assert_eq!(done.data["status"], "requires_action");
    let checkpoint = app
        .app
        .state
        .store
        .run_checkpoint(run.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert!(
        !checkpoint.contains(&data),
        "the checkpoint holds no image bytes"
    );
    app.stop().await;

    let app = TestApp::spawn_on(&db).await;
    app.llm.text("it is");
    let r = app
        .post(
            &format!("/api/runs/{run}/tool_outputs"),
            json!({"outputs": [{"call_id": "c1", "output": "yes"}]}),
            None,
        )
        .await;
    assert_eq!(r.status(), 202);
    let next: Value = r.json().await.unwrap();
    let events = app.events(next["run_id"].as_str().unwrap(), None).await;
    assert_eq!(events.last().unwrap().data["status"], "completed");
    let request = app.llm.chat_requests().remove(0);
    let query = request
        .messages
        .iter()
        .find(|m| m.content == "is this ok?")
        .unwrap();
    assert_eq!(query.images.len(), 1);
    assert_eq!(query.images[0].url, png, "loaded back from the artifact");
}

/// A model without vision gets a history's images as their `[image: …]` text.
#[tokio::test]
async fn a_model_without_vision_reads_earlier_images_as_text() {
    let app = TestApp::with(Options {
        llm: ScriptedLlm::json(),
        ..Options::default()
    })
    .await;
    let conv = app.create_conversation(None).await;
    let id: uuid::Uuid = conv.parse().unwrap();
    app.app
        .state
        .store
        .add_message(reagent::store::NewMessage {
            id: None,
            conversation_id: id,
            role: reagent::domain::MessageRole::User,
            kind: reagent::domain::MessageKind::Query,
            content: "what is this?".into(),
            run_id: None,
            images: vec![reagent::domain::MessageImage::Url { url: REMOTE.into() }],
        })
        .await
        .unwrap();
    app.llm
        .text(r#"{"action": "final_answer", "answer": "no idea"}"#);
    let run = app.start_run(&conv, json!({"query": "well?"}), None).await;
    app.events(&run, None).await;
    let request = app.llm.chat_requests().remove(0);
    let earlier = request
        .messages
        .iter()
        .find(|m| m.content.starts_with("what is this?"))
        .unwrap();
    assert!(earlier.images.is_empty());
    assert_eq!(earlier.content, format!("what is this?\n[image: {REMOTE}]"));
}

/// A run sends at most `server.max_run_image_bytes` of images: the query's first, then the
/// history's newest first; a message whose images do not fit what is left goes as text.
#[tokio::test]
async fn older_images_beyond_the_run_allowance_go_as_text() {
    let app = TestApp::with(Options {
        server_toml: "max_run_image_bytes = 40".into(),
        ..Options::default()
    })
    .await;
    app.llm.text("two").text("one").text("none");
    let (png, _) = png();
    let conv = app.create_conversation(None).await;
    let two = json!({"query": "what is this?", "images": [{"url": png}, {"url": png}]});
    let one = json!({"query": "and this one?", "images": [{"url": png}]});
    for body in [two, one, json!({"query": "and now?"})] {
        let run = app.start_run(&conv, body, None).await;
        let end = app.events(&run, None).await.pop().unwrap();
        assert_eq!(end.data["status"], "completed", "{:?}", end.data);
    }
    let requests = app.llm.chat_requests();
    let images = |request: usize, text: &str| {
        let m = requests[request]
            .messages
            .iter()
            .find(|m| m.content.starts_with(text))
            .unwrap_or_else(|| panic!("no message '{text}'"));
        (m.images.len(), m.content.matches("[image: ").count())
    };
    // 16 bytes each: the second run's query (16) leaves 24, too few for the first's two.
    assert_eq!(images(1, "and this one?"), (1, 0));
    assert_eq!(images(1, "what is this?"), (0, 2));
    // The third run has all 40 for the history: the newest message's image fits, not the rest.
    assert_eq!(images(2, "and this one?"), (1, 0));
    assert_eq!(images(2, "what is this?"), (0, 2));

    let r = app
        .post(
            &format!("/api/conversations/{conv}/runs"),
            json!({"query": "three?", "images": [{"url": png}, {"url": png}, {"url": png}]}),
            None,
        )
        .await;
    assert_eq!(error_code(r, 400).await, "invalid_request");
}
