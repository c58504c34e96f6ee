//! Images against the real binary, as bounded measurements (issue 51, item 4): ten
//! conversations holding 8 images of 780 KB each take a small follow-up at once (before: about
//! 25 MB of peak RSS per follow-up), and four runs carrying a run's whole image allowance start
//! at once (four 5 MiB images each: before, 413 at the 1 MiB body cap, and 8 × 5 MiB reached
//! 1.1 GB). Each test prints the server's peak RSS growth (`VmHWM` after − before) and asserts
//! it under a stated bound; the provider holds its replies so that the runs overlap.

use base64::Engine as _;

use super::*;

const MB: u64 = 1024 * 1024;

/// A `data:` URL of a PNG of `len` bytes: its signature, then bytes that vary with `seed`.
fn png(len: usize, seed: u64) -> String {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut x = seed.wrapping_add(1);
    while bytes.len() < len {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        bytes.push((x >> 56) as u8);
    }
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    format!("data:image/png;base64,{data}")
}

/// A new conversation's id.
async fn conversation(client: &reqwest::Client, server: &Server) -> String {
    let r = client
        .post(server.url("/api/conversations"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let conv: Value = r.json().await.unwrap();
    conv["id"].as_str().unwrap().to_string()
}

/// Starts a run of `query` with `images` in `conv`: the status and the body.
async fn start_run(
    client: &reqwest::Client,
    server: &Server,
    conv: &str,
    query: &str,
    images: &[String],
) -> (u16, Value) {
    let images: Vec<Value> = images.iter().map(|url| json!({ "url": url })).collect();
    let r = client
        .post(server.url(&format!("/api/conversations/{conv}/runs")))
        .json(&json!({"query": query, "images": images}))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// The text of a message as the provider got it (a string, or its text parts).
fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// For each provider request whose last message asks `query`, how many images it carried.
fn images_sent(llm: &FakeOpenAi, query: &str) -> Vec<usize> {
    let requests = llm.requests();
    requests
        .iter()
        .filter_map(|r| r["messages"].as_array())
        .filter(|messages| messages.last().is_some_and(|m| text_of(m) == query))
        .map(|messages| {
            messages
                .iter()
                .filter_map(|m| m["content"].as_array())
                .flatten()
                .filter(|p| p["type"] == "image_url")
                .count()
        })
        .collect()
}

#[tokio::test]
async fn follow_ups_in_conversations_holding_images_hold_each_image_once() {
    const CONVERSATIONS: u64 = 10;
    // 8 images of 780 KB are 8.3 MB of base64 per conversation: about one copy per run.
    const PEAK_GROWTH_BOUND: u64 = 100 * MB;
    let (dir, db_url) = workdir();
    let llm = FakeOpenAi::start().await.unwrap();
    llm.set_default(FakeReply::text("a picture"));
    let server = start(dir.path(), &db_url, &llm).await;
    let client = reqwest::Client::new();
    let mut conversations = Vec::new();
    for c in 0..CONVERSATIONS {
        let conv = conversation(&client, &server).await;
        let images: Vec<String> = (0..8).map(|i| png(780_000, c * 8 + i)).collect();
        let (status, body) = start_run(&client, &server, &conv, "what is this?", &images).await;
        assert_eq!(status, 202, "{body}");
        let shown = finished(&server, body["run_id"].as_str().unwrap()).await;
        assert_eq!(shown["status"], "completed", "{shown}");
        conversations.push(conv);
    }
    llm.set_default(FakeReply::text("still a picture").delay(1500));
    let before = server.status_bytes("VmHWM");
    let starts = conversations
        .iter()
        .map(|conv| start_run(&client, &server, conv, "and now?", &[]));
    let mut runs = Vec::new();
    for (status, body) in futures::future::join_all(starts).await {
        assert_eq!(status, 202, "{body}");
        runs.push(body["run_id"].as_str().unwrap().to_string());
    }
    for run in &runs {
        let shown = finished(&server, run).await;
        assert_eq!(shown["status"], "completed", "{shown}");
    }
    let after = server.status_bytes("VmHWM");
    let growth = after.saturating_sub(before);
    eprintln!(
        "{CONVERSATIONS} follow-ups with 8 × 780 KB images each: peak RSS {} MB -> {} MB (+{} MB)",
        before / MB,
        after / MB,
        growth / MB
    );
    let sent = images_sent(&llm, "and now?");
    assert!(!sent.is_empty());
    assert!(
        sent.iter().all(|n| *n == 8),
        "every follow-up sends its 8 images: {sent:?}"
    );
    assert!(growth < PEAK_GROWTH_BOUND, "peak RSS grew {growth} bytes");
}

#[tokio::test]
async fn runs_that_carry_a_whole_image_allowance_at_once_cost_bounded_memory() {
    const RUNS: u64 = 4;
    // 20 MiB of images a run (four of 5 MiB), 26.7 MiB as base64.
    const PEAK_GROWTH_BOUND: u64 = 400 * MB;
    let (dir, db_url) = workdir();
    let llm = FakeOpenAi::start().await.unwrap();
    llm.set_default(FakeReply::text("four pictures").delay(1500));
    let server = start(dir.path(), &db_url, &llm).await;
    let client = reqwest::Client::new();
    let mut conversations = Vec::new();
    for _ in 0..RUNS {
        conversations.push(conversation(&client, &server).await);
    }
    let before = server.status_bytes("VmHWM");
    let images: Vec<Vec<String>> = (0..RUNS)
        .map(|r| (0..4).map(|i| png(5 * MB as usize, r * 4 + i)).collect())
        .collect();
    let starts = conversations
        .iter()
        .zip(&images)
        .map(|(conv, images)| start_run(&client, &server, conv, "compare them", images));
    let mut runs = Vec::new();
    for (status, body) in futures::future::join_all(starts).await {
        assert_eq!(status, 202, "{body}");
        runs.push(body["run_id"].as_str().unwrap().to_string());
    }
    drop(images);
    for run in &runs {
        let shown = finished(&server, run).await;
        assert_eq!(shown["status"], "completed", "{shown}");
    }
    let after = server.status_bytes("VmHWM");
    let growth = after.saturating_sub(before);
    eprintln!(
        "{RUNS} runs with 4 × 5 MiB images each at once: peak RSS {} MB -> {} MB (+{} MB)",
        before / MB,
        after / MB,
        growth / MB
    );
    let sent = images_sent(&llm, "compare them");
    assert!(!sent.is_empty());
    assert!(sent.iter().all(|n| *n == 4), "{sent:?}");
    assert!(growth < PEAK_GROWTH_BOUND, "peak RSS grew {growth} bytes");

    // A fifth image, small, is over the run's allowance: refused before anything is stored.
    // (Anything much larger does not fit the body limit of the routes that take images: 413.)
    let conv = conversation(&client, &server).await;
    let mut five: Vec<String> = (0..4).map(|i| png(5 * MB as usize, 100 + i)).collect();
    five.push(png(600_000, 104));
    let (status, body) = start_run(&client, &server, &conv, "and these?", &five).await;
    assert_eq!(status, 400, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("max_run_image_bytes"), "{body}");
    let stored = server.get_json(&format!("/api/conversations/{conv}")).await;
    assert_eq!(stored["messages"], json!([]), "{stored}");
}
