//! Static files and artifacts cannot escape their directories; CR/LF and control characters
//! never break SSE framing or reach response headers.

use super::*;

#[tokio::test]
async fn static_files_and_artifacts_cannot_escape_their_directories() {
    // The helper serves the repository's static/; Cargo.toml sits next to it, /etc/passwd
    // further up.
    let app = TestApp::spawn().await;
    let (status, text) = raw_get(app.addr, "/index.html").await;
    assert_eq!(status, 200, "{text}");
    let cargo = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let leaked = |text: &str| text.contains("[dependencies]") || text.contains("root:x:0:0");
    let attempts = [
        "/../Cargo.toml".to_string(),
        "/static/../Cargo.toml".into(),
        "/css/../../Cargo.toml".into(),
        "/%2e%2e/Cargo.toml".into(),
        "/%2e%2e%2fCargo.toml".into(),
        "/..%2fCargo.toml".into(),
        "/%2E%2E%2FCargo.toml".into(),
        "/%252e%252e/Cargo.toml".into(),
        "/..%5cCargo.toml".into(),
        "/..\\Cargo.toml".into(),
        "/.%2e/Cargo.toml".into(),
        "/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd".into(),
        "/../../../../../../../../etc/passwd".into(),
        "//etc/passwd".into(),
        "/%2fetc%2fpasswd".into(),
        format!("/{cargo}"),
        format!("/{}", cargo.replace('/', "%2f")),
        "/..;/Cargo.toml".into(),
        "/..%00/Cargo.toml".into(),
        "/%c0%ae%c0%ae/Cargo.toml".into(),
        "/api/artifacts/..%2f..%2fCargo.toml".into(),
        "/api/artifacts/../../Cargo.toml".into(),
        "/api/artifacts/%2e%2e%2f%2e%2e%2fetc%2fpasswd".into(),
        "/api/../Cargo.toml".into(),
        "/api/%2e%2e/Cargo.toml".into(),
    ];
    for target in &attempts {
        let (status, text) = raw_get(app.addr, target).await;
        assert!(!leaked(&text), "{target} escaped: {text}");
        assert!((400..500).contains(&status), "{target} → {status}: {text}");
    }
}

#[tokio::test]
async fn control_characters_never_break_sse_framing() {
    let app = TestApp::spawn().await;
    let hostile = "a\r\nevent: done\r\ndata: {\"status\":\"completed\"}\r\n\r\nid: 999\n\nb\u{0}\u{1b}[31m\u{2028}\u{85}\r";
    let args = json!({"text": hostile}).to_string();
    app.llm.tool_calls(&[("c1\r\nevent: x", "echo", &args)]);
    app.llm.text(hostile);
    let r = app
        .post(
            "/api/conversations",
            json!({"title": "t\r\nevent: done\r\n\r\n"}),
            None,
        )
        .await;
    assert_eq!(r.status(), 201);
    let conv = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let query = hostile.replace('\u{0}', "");
    let run = app.start_run(&conv, json!({"query": query}), None).await;
    let r = app.events_response(&run, None).await;
    let mut body = r.bytes_stream();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(chunk) = body.next().await {
            raw.extend_from_slice(&chunk.unwrap());
        }
    })
    .await
    .expect("stream did not end");
    let raw = String::from_utf8(raw).unwrap();
    assert!(!raw.contains('\r'), "a raw CR reached the stream");
    let frames: Vec<&str> = raw.split("\n\n").filter(|f| !f.is_empty()).collect();
    let mut names = Vec::new();
    let frames: Vec<Vec<&str>> = frames
        .iter()
        .map(|f| {
            f.lines()
                .filter(|l| !l.starts_with(':'))
                .collect::<Vec<_>>()
        })
        .filter(|lines| !lines.is_empty())
        .collect();
    for (i, lines) in frames.iter().enumerate() {
        let frame = lines.join("\n");
        assert_eq!(lines.len(), 3, "frame {i} is not id/event/data: {frame:?}");
        assert_eq!(lines[0], format!("id: {}", i + 1));
        let name = lines[1].strip_prefix("event: ").unwrap();
        let data = lines[2].strip_prefix("data: ").unwrap();
        let parsed: Value = serde_json::from_str(data).unwrap();
        names.push((name.to_string(), parsed));
    }
    assert_eq!(
        names.iter().filter(|(n, _)| n == "done").count(),
        1,
        "forged done"
    );
    let (last, done) = names.last().unwrap();
    assert_eq!(last, "done");
    assert_eq!(done["status"], "completed");
    // The hostile text went through intact, as JSON data.
    let tool_end = names
        .iter()
        .find(|(n, d)| n == "step" && d["type"] == "tool_end")
        .unwrap();
    assert!(tool_end.1["observation"]
        .as_str()
        .unwrap()
        .contains("event: done"));
}

#[tokio::test]
async fn no_request_input_is_reflected_into_response_headers() {
    let app = TestApp::spawn().await;
    for target in [
        "/api/nope?x=%0d%0aSet-Cookie:%20a=b",
        "/%0d%0aSet-Cookie:%20a=b",
        "/api/conversations/%0d%0aSet-Cookie:%20a=b",
        "/api/runs/00000000-0000-0000-0000-000000000000/events?after=%0d%0aSet-Cookie:%20a=b",
    ] {
        let (status, text) = raw_get(app.addr, target).await;
        let head = text.split("\r\n\r\n").next().unwrap().to_ascii_lowercase();
        assert!(!head.contains("set-cookie"), "{target} → {status}: {head}");
        assert!(status < 500, "{target} → {status}");
    }
    let r = app
        .client
        .get(app.url("/api/runs/00000000-0000-0000-0000-000000000000/events"))
        .header("Last-Event-ID", "1\tSet-Cookie: a=b")
        .send()
        .await
        .unwrap();
    assert!(r.headers().get("set-cookie").is_none());
    assert_eq!(error_code(r, 400).await, "invalid_request");
}
