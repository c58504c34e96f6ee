//! The binary as a newcomer meets it: the UI compiled in (or the `REAGENT_STATIC_DIR` folder),
//! served from any directory, and requests and finished runs logged at info.

use super::*;

/// Polls the child's log until a line satisfies `pred` (the log is read asynchronously).
async fn log_line(server: &Server, pred: impl Fn(&str) -> bool) -> String {
    crate::support::eventually("the log line", || {
        let line = server.log().lines().find(|l| pred(l)).map(str::to_string);
        async move { line }
    })
    .await
}

/// A binary started far from the checkout — an empty working directory, no configuration —
/// serves the UI compiled into it (docs/api.md), with content types, ETags and 304s, and its
/// log says where the database and the UI are.
#[tokio::test]
async fn the_ui_is_compiled_into_the_binary_and_served_from_any_directory() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::serve(dir.path(), &[]).await;
    let base = server.base.clone();
    let client = reqwest::Client::new();

    let index = client.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(index.status(), 200);
    let header = |r: &reqwest::Response, name: &str| {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    assert!(header(&index, "content-type").starts_with("text/html"));
    assert_eq!(header(&index, "cache-control"), "no-cache");
    assert_eq!(
        index.text().await.unwrap(),
        include_str!("../../../static/index.html")
    );

    let script = client.get(format!("{base}/app.js")).send().await.unwrap();
    assert_eq!(script.status(), 200);
    assert!(header(&script, "content-type").starts_with("text/javascript"));
    let etag = header(&script, "etag");
    assert!(etag.starts_with('"') && etag.len() > 10, "etag {etag:?}");
    assert_eq!(
        script.text().await.unwrap(),
        include_str!("../../../static/app.js")
    );
    let again = client
        .get(format!("{base}/app.js"))
        .header("If-None-Match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);

    let icon = client
        .get(format!("{base}/favicon.svg"))
        .send()
        .await
        .unwrap();
    assert_eq!(icon.status(), 200);
    assert!(header(&icon, "content-type").starts_with("image/svg+xml"));
    let missing = client.get(format!("{base}/nope.js")).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_found");

    log_line(&server, |l| l.contains("ui: compiled into the binary")).await;
    let db = dir.path().join("data").join("reagent.db");
    log_line(&server, |l| {
        l.contains(&format!("database: SQLite file {}", db.display()))
    })
    .await;
}

/// `REAGENT_STATIC_DIR` serves a folder instead (UI development), and the log names it.
#[tokio::test]
async fn reagent_static_dir_serves_a_folder_instead() {
    let dir = tempfile::tempdir().unwrap();
    let ui = dir.path().join("ui");
    std::fs::create_dir(&ui).unwrap();
    std::fs::write(ui.join("index.html"), "<p>work in progress</p>").unwrap();
    let ui_dir = ui.display().to_string();
    let server = Server::serve(dir.path(), &[("REAGENT_STATIC_DIR", ui_dir.as_str())]).await;
    let base = server.base.clone();
    let index = reqwest::get(format!("{base}/")).await.unwrap();
    assert_eq!(index.status(), 200);
    assert_eq!(index.text().await.unwrap(), "<p>work in progress</p>");
    let gone = reqwest::get(format!("{base}/app.js")).await.unwrap();
    assert_eq!(gone.status(), 404, "only the folder is served");
    log_line(&server, |l| l.contains(&format!("ui: folder {ui_dir}"))).await;
}

/// Every request leaves an access-log line (method, path, status, latency) and every run one
/// line when it ends (status, iterations, tool calls, tokens, duration), at the default level.
#[tokio::test]
async fn requests_and_finished_runs_are_logged_at_info() {
    let dir = tempfile::tempdir().unwrap();
    let llm = FakeOpenAi::start().await.unwrap();
    llm.set_default(FakeReply::text("logged"));
    let server = Server::serve(
        dir.path(),
        &[
            ("LLM_BASE_URL", llm.base_url().as_str()),
            ("LLM_MAX_RETRIES", "0"),
        ],
    )
    .await;
    let base = server.base.clone();
    let client = reqwest::Client::new();
    let r = client
        .get(format!(
            "{base}/api/runs/00000000-0000-0000-0000-000000000000"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = client
        .post(format!("{base}/api/chat"))
        .json(&json!({"query": "log me"}))
        .send()
        .await
        .unwrap();
    let events = read_all(r).await;
    assert_eq!(events.last().map(|e| e.event.as_str()), Some("done"));

    // The route template, not the path: no ids in the access log.
    let access = log_line(&server, |l| {
        l.contains("method=GET") && l.contains("route=/api/runs/{run_id}") && l.contains("status=")
    })
    .await;
    assert!(access.contains("INFO"), "{access}");
    assert!(access.contains("status=404"), "{access}");
    assert!(access.contains("duration_ms="), "{access}");
    assert!(!access.contains("00000000-0000"), "{access}");
    let finished = log_line(&server, |l| l.contains("run finished")).await;
    for field in [
        "status=completed",
        "iterations=1",
        "tool_calls=0",
        "total_tokens=",
        "duration_ms=",
        "run_id=",
        "conversation_id=",
        "agent=reagent",
        "model=",
    ] {
        assert!(finished.contains(field), "{field} missing in {finished}");
    }
}
