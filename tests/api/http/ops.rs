//! Ops endpoints, the OpenAPI route list, the rate limit and the metrics key.

use super::*;

#[tokio::test]
async fn ops_endpoints() {
    let app = TestApp::spawn().await;
    app.llm.tool_calls(&[("c1", "echo", "{}")]);
    app.llm.text("ok");
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    app.events(&run, None).await;
    assert_eq!(app.get("/readyz", None).await.status(), 200);
    // Outcomes are counted as `done` is emitted, but the run leaves the active set only after
    // its task has finished, which may be just after the client read `done`: wait (bounded).
    let app = &app;
    let metrics = eventually("the run counted and no longer active", || async move {
        let metrics = app.get("/metrics", None).await.text().await.unwrap();
        if metrics.contains("reagent_runs_total{status=\"completed\"} 1")
            && metrics.contains("reagent_active_runs 0")
        {
            Ok(metrics)
        } else {
            Err(metrics)
        }
    })
    .await;
    assert!(
        metrics.contains("reagent_runs_total{status=\"completed\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("reagent_tool_calls_total{tool=\"echo\"} 1"));
    assert!(metrics.contains("reagent_llm_calls_total"));
    assert!(metrics.contains("reagent_active_runs 0"));
    let tools: Value = app.get_json("/api/tools", None).await;
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "gate", "report"]);
    assert_eq!(tools[0]["source"], "builtin");
    let models: Value = app.get_json("/api/models", None).await;
    assert_eq!(models[0]["name"], "scripted");
    assert_eq!(models[0]["default"], true);
    assert!(models.to_string().find("api_key").is_none());
    let index = app.get("/", None).await;
    assert_eq!(index.status(), 200);
    assert!(index.text().await.unwrap().contains("reagent"));
}

#[tokio::test]
async fn openapi_lists_every_route() {
    let app = TestApp::spawn().await;
    let doc: Value = app.get_json("/api/openapi.json", None).await;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    let expected = [
        ("/api/conversations", vec!["get", "post"]),
        ("/api/conversations/{id}", vec!["get", "patch", "delete"]),
        ("/api/conversations/{id}/runs", vec!["post"]),
        ("/api/conversations/{id}/fork", vec!["post"]),
        ("/api/conversations/{id}/interrupt", vec!["post"]),
        (
            "/api/conversations/{id}/interrupt/{interrupt_id}",
            vec!["delete"],
        ),
        ("/api/chat", vec!["post"]),
        ("/api/runs/{run_id}", vec!["get"]),
        ("/api/runs/{run_id}/events", vec!["get"]),
        ("/api/runs/{run_id}/cancel", vec!["post"]),
        ("/api/runs/{run_id}/tool_outputs", vec!["post"]),
        ("/api/approvals", vec!["get"]),
        ("/api/approvals/{id}", vec!["post"]),
        ("/api/tools", vec!["get"]),
        ("/api/mcp", vec!["get"]),
        ("/api/models", vec!["get"]),
        ("/api/agents", vec!["get", "post"]),
        ("/api/agents/{name}", vec!["get", "put", "delete"]),
        ("/api/agents/{name}/versions", vec!["get"]),
        ("/api/agents/{name}/versions/{version}", vec!["get"]),
        ("/api/artifacts/{id}", vec!["get"]),
        ("/api/openapi.json", vec!["get"]),
        ("/healthz", vec!["get"]),
        ("/readyz", vec!["get"]),
        ("/metrics", vec!["get"]),
        ("/api/instances", vec!["get"]),
        ("/api/usage", vec!["get"]),
        ("/v1/models", vec!["get"]),
        ("/v1/chat/completions", vec!["post"]),
        ("/v1/responses", vec!["post"]),
        ("/v1/responses/{id}", vec!["get", "delete"]),
        ("/v1/responses/{id}/cancel", vec!["post"]),
        ("/v1/responses/{id}/input_items", vec!["get"]),
        ("/ag-ui/{agent}", vec!["post"]),
        ("/ai-sdk/{agent}", vec!["post"]),
        ("/ai-sdk/{agent}/{id}/stream", vec!["get"]),
    ];
    assert_eq!(paths.len(), expected.len());
    for (path, methods) in expected {
        for m in methods {
            assert!(paths[path].get(m).is_some(), "{m} {path} missing");
        }
    }
}

#[tokio::test]
async fn rate_limit_answers_429_with_retry_after() {
    let app = TestApp::with(Options {
        server_toml: "rate_limit_per_minute = 2".into(),
        ..Options::default()
    })
    .await;
    assert_eq!(app.get("/api/tools", None).await.status(), 200);
    assert_eq!(app.get("/api/tools", None).await.status(), 200);
    let r = app.get("/api/tools", None).await;
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 1);
    assert_eq!(error_code(r, 429).await, "rate_limited");
    // Health checks are not rate limited.
    assert_eq!(app.get("/healthz", None).await.status(), 200);
}

#[tokio::test]
async fn metrics_key_guards_metrics_and_api_keys_do_not_open_it() {
    let app = TestApp::with(Options {
        env: vec![("REAGENT_API_KEYS", "alice:ka".into())],
        toml: "[auth]\nmetrics_key = \"mk\"\n".into(),
        ..Options::default()
    })
    .await;
    assert_eq!(
        error_code(app.get("/metrics", None).await, 401).await,
        "unauthorized"
    );
    // docs/api.md: `/metrics` has its own key; an API key is not it.
    assert_eq!(
        error_code(app.get("/metrics", Some("ka")).await, 401).await,
        "unauthorized"
    );
    let r = app.get("/metrics", Some("mk")).await;
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("reagent_active_runs 0"));
    // And the metrics key is no API key.
    assert_eq!(
        error_code(app.get("/api/tools", Some("mk")).await, 401).await,
        "unauthorized"
    );
    assert_eq!(app.get("/api/tools", Some("ka")).await.status(), 200);
}

#[tokio::test]
async fn metrics_are_public_without_a_metrics_key_even_with_api_keys() {
    let app = TestApp::with(Options {
        env: vec![("REAGENT_API_KEYS", "alice:ka".into())],
        ..Options::default()
    })
    .await;
    assert_eq!(app.get("/metrics", None).await.status(), 200);
    assert_eq!(
        error_code(app.get("/api/tools", None).await, 401).await,
        "unauthorized"
    );
}
