//! LLM replies the service must bound or repair: over the size cap, events without line
//! breaks, tool-call arguments that are not JSON, call ids shared by several calls.

use super::*;

/// `LLM_MAX_RESPONSE_BYTES` for the capped tests: 1 MB.
const CAP: &str = "1000000";

#[tokio::test]
async fn a_loop_reply_over_the_size_cap_fails_the_run_without_retrying() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.set_default(FakeReply::text("lorem ipsum ".repeat(200_000)));
    let app = llm_app(
        &fake.base_url(),
        vec![("LLM_MAX_RESPONSE_BYTES", CAP.into())],
    )
    .await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "failed").await;
    assert!(
        d["error"]
            .as_str()
            .unwrap()
            .contains("LLM_MAX_RESPONSE_BYTES"),
        "{d}"
    );
    assert_eq!(
        calls(&fake),
        (1, 0),
        "the same answer would come again: no retry"
    );
}

#[tokio::test]
async fn a_streamed_answer_over_the_size_cap_is_cut_and_falls_back() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::text("The brief answer."));
    fake.push(FakeReply::text("lorem ipsum ".repeat(200_000)).chunk_chars(16 * 1024));
    let app = llm_app(
        &fake.base_url(),
        vec![("LLM_MAX_RESPONSE_BYTES", CAP.into())],
    )
    .await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "completed").await;
    assert_eq!(d["answer"], "The brief answer.");
    assert_eq!(answer_done(&events)["fallback"], true);
    assert!(labels(&events).contains(&"answer:reset".to_string()));
    let streamed: usize = events
        .iter()
        .filter(|e| e.label() == "answer:delta")
        .map(|e| e.data["content"].as_str().unwrap().len())
        .sum::<usize>()
        - "The brief answer.".len();
    assert!(
        streamed <= 1_000_000,
        "{streamed} bytes streamed past the cap"
    );
    assert_eq!(calls(&fake), (1, 1));
}

/// A provider that answers the loop call normally, then streams one SSE "event" that never
/// ends (no line break, ever): the size cap, not the time budget, must stop it.
#[tokio::test]
async fn an_endless_event_without_line_breaks_is_cut_by_the_size_cap() {
    use axum::response::IntoResponse;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let provider = Router::new().route(
        "/v1/chat/completions",
        post(|body: axum::Json<Value>| async move {
            if body["stream"] == true {
                let chunk = axum::body::Bytes::from(vec![b'a'; 64 * 1024]);
                let endless =
                    futures::stream::repeat_with(move || Ok::<_, std::io::Error>(chunk.clone()));
                (
                    [("content-type", "text/event-stream")],
                    axum::body::Body::from_stream(endless),
                )
                    .into_response()
            } else {
                axum::Json(json!({
                    "choices": [{"message": {"role": "assistant", "content": "The brief answer."},
                                 "finish_reason": "stop"}],
                }))
                .into_response()
            }
        }),
    );
    let server = tokio::spawn(async move { axum::serve(listener, provider).await });
    let app = llm_app(
        &format!("http://{addr}/v1"),
        vec![
            ("LLM_MAX_RESPONSE_BYTES", CAP.into()),
            ("LLM_TIMEOUT_S", "30".into()),
        ],
    )
    .await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "completed").await;
    assert_eq!(d["answer"], "The brief answer.");
    assert_eq!(answer_done(&events)["fallback"], true);
    server.abort();
}

#[tokio::test]
async fn tool_call_arguments_that_are_not_json_become_an_error_observation() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::tool_calls(vec![("c1", "echo", "{not json")]));
    fake.push(FakeReply::text("I could not call the tool."));
    let (_, events) = run_hello(&fake, "completed").await;
    let end = events
        .iter()
        .find(|e| e.label() == "step:tool_end")
        .expect("tool_end");
    assert_eq!(end.data["error"], true);
    assert!(
        end.data["observation"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{}",
        end.data
    );
    // The model saw the error next to its call id, and the assistant message kept the raw text.
    let second = &fake.requests()[1];
    let msgs = second["messages"].as_array().unwrap();
    let tool_msg = msgs.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool_msg["tool_call_id"], "c1");
    assert!(tool_msg["content"]
        .as_str()
        .unwrap()
        .contains("not valid JSON"));
    assert_eq!(calls(&fake), (2, 1));
    assert_eq!(
        fake.requests()[2]["stream"],
        true,
        "synthesis still ran: {}",
        FAKE_DEFAULT_TEXT
    );
}

#[tokio::test]
async fn tool_calls_sharing_one_id_get_distinct_ids_before_going_back_to_the_provider() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::tool_calls(vec![
        ("dup", "echo", r#"{"text":"1"}"#),
        ("dup", "echo", r#"{"text":"2"}"#),
    ]));
    fake.push(FakeReply::text("both done"));
    let (d, _) = run_hello(&fake, "completed").await;
    assert_eq!(d["tool_calls"], 2);
    let msgs = fake.requests()[1]["messages"].as_array().unwrap().clone();
    let assistant = msgs.iter().find(|m| m["tool_calls"].is_array()).unwrap();
    let call_ids: Vec<&str> = assistant["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let result_ids: Vec<&str> = msgs
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(call_ids, ["dup", "dup_2"]);
    assert_eq!(result_ids, call_ids, "each result answers exactly one call");
}
