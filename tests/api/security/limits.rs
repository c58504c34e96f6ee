//! Limits: the read buffer (431, 414), 413 on every body route, the text bounds, the per-key
//! rate limit.

use super::*;

/// The routes that take images: their body limit is a run's image allowance as base64 on top
/// of the 1 MiB of the others (docs/api.md "Limits").
const IMAGE_ROUTES: [&str; 6] = [
    "/api/conversations/{id}/runs",
    "/api/chat",
    "/v1/chat/completions",
    "/v1/responses",
    "/ag-ui/{agent}",
    "/ai-sdk/{agent}",
];
const IMAGE_BODY_LIMIT: usize = 1024 * 1024 + (20 * 1024 * 1024_usize).div_ceil(3) * 4;

/// Each connection's read buffer is capped at 8 KB (`server::serve`): bodies far larger still
/// arrive whole (they are read through it in pieces), a request head that does not fit gets a
/// clear 431 on its own connection, and the server goes on serving.
#[tokio::test]
async fn requests_larger_than_the_read_buffer() {
    let app = TestApp::spawn().await;
    let prompt: String = "é long system prompt; ".repeat(3000); // ~69 KB
    let r = app
        .post("/api/conversations", json!({"system_prompt": prompt}), None)
        .await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let got = app
        .get_json(&format!("/api/conversations/{id}"), None)
        .await;
    assert_eq!(got["system_prompt"], prompt.as_str(), "stored intact");

    let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let head = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(16 * 1024)
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out))
        .await
        .expect("an answer, not a hang")
        .unwrap();
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 431"), "{text}");

    let (status, _) = raw_get(app.addr, "/healthz").await;
    assert_eq!(status, 200, "still serving");
}

/// A request line that does not fit the 8 KB read buffer is a URI too long (414, with the
/// API's JSON error), on a fresh connection and after a served request on a keep-alive one;
/// a long header after a short request line stays 431, and the server goes on serving.
#[tokio::test]
async fn over_long_urls_get_414() {
    let app = TestApp::spawn().await;
    let long = format!(
        "GET /api/conversations?q={} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "a".repeat(12 * 1024)
    );
    for keep_alive in [false, true] {
        let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
        if keep_alive {
            stream
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            let mut first = Vec::new();
            while !String::from_utf8_lossy(&first).ends_with(r#"{"status":"ok"}"#) {
                let mut chunk = [0u8; 1024];
                let n = stream.read(&mut chunk).await.unwrap();
                assert!(n > 0, "closed before the first response");
                first.extend_from_slice(&chunk[..n]);
            }
        }
        let text = exchange(&mut stream, &long).await;
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(
            head.starts_with("HTTP/1.1 414 "),
            "keep-alive {keep_alive}: {text}"
        );
        let body: Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["error"]["code"], "uri_too_long", "{body}");
    }
    let big_header = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(12 * 1024)
    );
    let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let text = exchange(&mut stream, &big_header).await;
    assert!(text.starts_with("HTTP/1.1 431"), "{text}");
    let (status, _) = raw_get(app.addr, "/healthz").await;
    assert_eq!(status, 200, "still serving");
}

/// Writes `request` and reads until the server closes the connection.
async fn exchange(stream: &mut tokio::net::TcpStream, request: &str) -> String {
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out))
        .await
        .expect("an answer, not a hang")
        .unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn bodies_over_the_limit_are_413_on_every_body_route_sized_or_chunked() {
    let app = TestApp::spawn().await;
    let conv = app.create_conversation(None).await;
    let doc = openapi(&app).await;
    let ids: BTreeMap<&str, String> = [
        ("id", conv.clone()),
        ("run_id", uuid::Uuid::new_v4().to_string()),
        ("interrupt_id", uuid::Uuid::new_v4().to_string()),
        ("agent", "reagent".to_string()),
        ("name", "some-agent".to_string()),
        ("version", "1".to_string()),
    ]
    .into();
    let mut checked = 0;
    for op in operations(&doc).into_iter().filter(|op| op.has_body) {
        let takes_images = IMAGE_ROUTES.contains(&op.path.as_str());
        let limit = if takes_images {
            IMAGE_BODY_LIMIT
        } else {
            1024 * 1024
        };
        // A syntactically valid JSON body just over the route's limit.
        let big = json!({"query": "x".repeat(limit)}).to_string();
        assert!(big.len() > limit);
        let path = fill(&op.path, &ids);
        let method = reqwest::Method::from_bytes(op.method.to_uppercase().as_bytes()).unwrap();
        if takes_images {
            // Over 1 MiB but under the images' limit: read (and refused for what it says).
            let two = json!({"query": "x".repeat(2 * 1024 * 1024)}).to_string();
            let r = app
                .client
                .request(method.clone(), app.url(&path))
                .header("content-type", "application/json")
                .body(two)
                .send()
                .await
                .unwrap();
            assert_ne!(r.status(), 413, "{path}");
        }
        let sized = app
            .client
            .request(method.clone(), app.url(&path))
            .header("content-type", "application/json")
            .body(big.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(error_code(sized, 413).await, "payload_too_large", "{path}");
        // Chunked: no Content-Length, the limit must still hold while streaming.
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> = big
            .as_bytes()
            .chunks(64 * 1024)
            .map(|c| Ok(c.to_vec()))
            .collect();
        let chunked = app
            .client
            .request(method, app.url(&path))
            .header("content-type", "application/json")
            .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
            .send()
            .await
            .unwrap();
        assert_eq!(
            error_code(chunked, 413).await,
            "payload_too_large",
            "{path} chunked"
        );
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} body routes");
    // Nothing was started.
    let detail: Value = app
        .get_json(&format!("/api/conversations/{conv}"), None)
        .await;
    assert_eq!(detail["messages"], json!([]));
}

#[tokio::test]
async fn text_bound_is_100_000_characters_not_bytes() {
    let app = TestApp::spawn().await;
    app.llm.tool_calls(&[("c1", "gate", "{}")]);
    app.llm.text("ok");
    let conv = app.create_conversation(None).await;
    let runs = format!("/api/conversations/{conv}/runs");
    // 100 001 two-byte characters: 200 KB, well under the body limit, one character too many.
    let over = "é".repeat(100_001);
    for (path, body) in [
        (runs.as_str(), json!({"query": over})),
        ("/api/chat", json!({"query": over})),
        (
            &format!("/api/conversations/{conv}/interrupt") as &str,
            json!({"content": over}),
        ),
    ] {
        let r = app.post(path, body, None).await;
        assert_eq!(error_code(r, 400).await, "invalid_request", "{path}");
    }
    // Exactly 100 000 is accepted, for the query and for an interrupt.
    let run = app
        .start_run(&conv, json!({"query": "é".repeat(100_000)}), None)
        .await;
    app.wait_for(&run, |e| e.label() == "step:tool_start").await;
    let r = app.interrupt(&conv, &"é".repeat(100_000)).await;
    assert_eq!(r.status(), 202);
    app.gate.release();
    let events = app.events(&run, None).await;
    assert_eq!(events.last().unwrap().event, "done");
}

/// Titles and system prompts are bounded (a 935,000-character system prompt was accepted and
/// then sent, pinned, with every LLM call), with the limit named in the error.
#[tokio::test]
async fn titles_and_system_prompts_are_bounded() {
    let app = TestApp::spawn().await;
    async fn message(r: reqwest::Response) -> String {
        assert_eq!(r.status(), 400);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "invalid_request");
        body["error"]["message"].as_str().unwrap().to_string()
    }
    // Each case creates a conversation with its body.
    let create = |body: Value| app.post("/api/conversations", body, None);
    let r = create(json!({"title": "t".repeat(201)})).await;
    assert!(message(r)
        .await
        .contains("title is longer than 200 characters"));
    let r = create(json!({"system_prompt": "é".repeat(100_001)})).await;
    assert!(message(r)
        .await
        .contains("system_prompt is longer than 100000 characters"));
    let r = create(json!({"title": "é".repeat(200), "system_prompt": "é".repeat(100_000)})).await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app
        .client
        .patch(app.url(&format!("/api/conversations/{id}")))
        .json(&json!({"title": "t".repeat(201)}))
        .send()
        .await
        .unwrap();
    assert!(message(r).await.contains("200 characters"));
    let detail: Value = app
        .get_json(&format!("/api/conversations/{id}"), None)
        .await;
    assert_eq!(
        detail["title"],
        "é".repeat(200),
        "the refused rename changed nothing"
    );
}

#[tokio::test]
async fn rate_limit_is_per_key_and_wrong_keys_do_not_spend_it() {
    let (app, _) = two_tenants("rate_limit_per_minute = 3").await;
    // Failed authentications neither pass nor consume alice's tokens.
    for _ in 0..5 {
        let r = send(&app, "get", "/api/tools", None, Some("Bearer wrong")).await;
        assert_eq!(error_code(r, 401).await, "unauthorized");
    }
    for _ in 0..3 {
        let r = send(&app, "get", "/api/tools", None, Some(ALICE)).await;
        assert_eq!(r.status(), 200);
    }
    let r = send(&app, "get", "/api/tools", None, Some(ALICE)).await;
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    assert_eq!(error_code(r, 429).await, "rate_limited");
    // Every /api route is limited, not only the one used above.
    let r = send(
        &app,
        "post",
        "/api/conversations",
        Some(json!({})),
        Some(ALICE),
    )
    .await;
    assert_eq!(error_code(r, 429).await, "rate_limited");
    // Bob has his own bucket; health stays open.
    let r = send(&app, "get", "/api/tools", None, Some(BOB)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(app.get("/healthz", None).await.status(), 200);
}
