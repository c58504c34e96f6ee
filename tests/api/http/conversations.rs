//! Conversations: tenancy, malformed requests, CRUD and pagination, delete of an active run,
//! artifacts served only to their owner.

use super::*;

on_both_backends!(
    tenants_cannot_see_each_other,
    conversations_crud_and_pagination,
    conversations_search,
    delete_cancels_the_active_run,
    artifacts_are_served_safely_and_only_to_their_owner,
);

async fn tenants_cannot_see_each_other(db: String) {
    let mut app = TestApp::with(Options {
        db_url: Some(db.clone()),
        env: vec![("REAGENT_API_KEYS", "alice:ka,bob:kb".into())],
        ..Options::default()
    })
    .await;
    app.llm.text("ok");
    // No key, wrong key → 401; health stays public.
    assert_eq!(
        error_code(app.get("/api/conversations", None).await, 401).await,
        "unauthorized"
    );
    assert_eq!(
        error_code(app.get("/api/conversations", Some("nope")).await, 401).await,
        "unauthorized"
    );
    assert_eq!(app.get("/healthz", None).await.status(), 200);
    app.key = Some("ka".into());
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    app.events(&run, None).await;
    let bob = Some("kb");
    for path in [
        format!("/api/conversations/{conv}"),
        format!("/api/runs/{run}"),
        format!("/api/runs/{run}/events"),
        format!("/api/artifacts/{}", uuid::Uuid::new_v4()),
    ] {
        assert_eq!(
            error_code(app.get(&path, bob).await, 404).await,
            "not_found",
            "{path}"
        );
    }
    let r = app
        .post(
            &format!("/api/conversations/{conv}/runs"),
            json!({"query": "x"}),
            bob,
        )
        .await;
    assert_eq!(error_code(r, 404).await, "not_found");
    let list: Value = app.get_json("/api/conversations", bob).await;
    assert_eq!(list["items"], json!([]));
    let list: Value = app.get_json("/api/conversations", None).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    assert_eq!(
        app.delete(&format!("/api/conversations/{conv}"), bob)
            .await
            .status(),
        404
    );
    assert_eq!(
        app.delete(&format!("/api/conversations/{conv}"), None)
            .await
            .status(),
        204
    );
}

#[tokio::test]
async fn malformed_requests_get_json_errors() {
    let app = TestApp::spawn().await;
    let conv = app.create_conversation(None).await;
    let runs = format!("/api/conversations/{conv}/runs");
    let bad_json = app
        .client
        .post(app.url(&runs))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(bad_json, 400).await, "invalid_request");
    let no_type = app
        .client
        .post(app.url(&runs))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(no_type, 400).await, "invalid_request");
    for body in [
        json!({"query": ""}),
        json!({"query": 5}),
        json!({}),
        json!({"query": "x", "mode": "turbo"}),
        json!({"query": "x".repeat(100_001)}),
    ] {
        let r = app.post(&runs, body.clone(), None).await;
        assert_eq!(error_code(r, 400).await, "invalid_request");
    }
    // Over the limit of the routes that take images: 1 MiB and a run's images as base64.
    let huge = "a".repeat(1024 * 1024 + 28 * 1024 * 1024);
    let r = app
        .client
        .post(app.url(&runs))
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(r, 413).await, "payload_too_large");
    assert_eq!(
        error_code(app.get("/api/nope", None).await, 404).await,
        "not_found"
    );
    assert_eq!(
        error_code(app.get("/api/conversations/not-a-uuid", None).await, 404).await,
        "not_found"
    );
    assert_eq!(
        error_code(
            app.get(&format!("/api/runs/{}", uuid::Uuid::new_v4()), None)
                .await,
            404
        )
        .await,
        "not_found"
    );
    let r = app
        .client
        .put(app.url("/api/conversations"))
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(r, 405).await, "method_not_allowed");
    // Nothing was started by any of these.
    let detail: Value = app
        .get_json(&format!("/api/conversations/{conv}"), None)
        .await;
    assert_eq!(detail["messages"], json!([]));
}

async fn conversations_crud_and_pagination(db: String) {
    let app = TestApp::spawn_on(&db).await;
    let a = app.create_conversation(None).await;
    let b = app.create_conversation(None).await;
    let page: Value = app.get_json("/api/conversations?limit=1", None).await;
    assert_eq!(page["items"][0]["id"], b.as_str());
    let next = page["next_before"].as_str().unwrap();
    let page2: Value = app
        .get_json(&format!("/api/conversations?limit=1&before={next}"), None)
        .await;
    assert_eq!(page2["items"][0]["id"], a.as_str());
    assert_eq!(
        error_code(
            app.get("/api/conversations?before=garbage", None).await,
            400
        )
        .await,
        "invalid_request"
    );
    let r = app
        .client
        .patch(app.url(&format!("/api/conversations/{a}")))
        .json(&json!({"title": "renamed"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["title"], "renamed");
    assert!(body["active_run_id"].is_null());
    // Renaming is not activity: the list (newest activity first) keeps its order, so the
    // renamed conversation does not jump to the top under the user's cursor.
    let listed: Value = app.get_json("/api/conversations", None).await;
    let ids: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(ids, [b.as_str(), a.as_str()]);
    assert_eq!(
        listed["items"][1]["updated_at"],
        page2["items"][0]["updated_at"]
    );
    let r = app
        .post("/api/conversations", json!({"model": "nope"}), None)
        .await;
    assert_eq!(error_code(r, 400).await, "invalid_request");
    assert_eq!(
        app.delete(&format!("/api/conversations/{a}"), None)
            .await
            .status(),
        204
    );
    assert_eq!(
        app.get(&format!("/api/conversations/{a}"), None)
            .await
            .status(),
        404
    );
}

/// `GET /api/conversations?q=`: every word, in the title or a message, any case; the plain
/// list's paging; a blank `q` lists all; too long or too many words is a 400.
async fn conversations_search(db: String) {
    let app = TestApp::spawn_on(&db).await;
    let mut ids = Vec::new();
    for title in ["Trip to Kyoto", "Kyoto budget", "Groceries"] {
        let r = app
            .post("/api/conversations", json!({ "title": title }), None)
            .await;
        assert_eq!(r.status(), 201);
        let body: Value = r.json().await.unwrap();
        ids.push(body["id"].as_str().unwrap().to_string());
    }
    let found = |page: &Value| -> Vec<String> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect()
    };
    let page: Value = app
        .get_json("/api/conversations?q=kyoto&limit=1", None)
        .await;
    assert_eq!(found(&page), [ids[1].clone()]);
    let next = page["next_before"].as_str().unwrap();
    let page: Value = app
        .get_json(
            &format!("/api/conversations?q=kyoto&limit=1&before={next}"),
            None,
        )
        .await;
    assert_eq!(found(&page), [ids[0].clone()]);
    assert!(page["next_before"].is_null());
    let page: Value = app
        .get_json("/api/conversations?q=%20BUDGET%20%20kyo%20", None)
        .await;
    assert_eq!(found(&page), [ids[1].clone()]);
    let page: Value = app.get_json("/api/conversations?q=%20", None).await;
    assert_eq!(found(&page).len(), 3);
    let many: Vec<String> = (0..11).map(|i| format!("w{i}")).collect();
    let many = many.join("+");
    let long = "x".repeat(201);
    for q in [many, long] {
        let r = app.get(&format!("/api/conversations?q={q}"), None).await;
        assert_eq!(error_code(r, 400).await, "invalid_request", "{q}");
    }
}

async fn delete_cancels_the_active_run(db: String) {
    let app = TestApp::spawn_on(&db).await;
    app.llm.tool_calls(&[("c1", "gate", "{}")]);
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    app.wait_for(&run, |e| e.label() == "step:tool_start").await;
    assert_eq!(
        app.delete(&format!("/api/conversations/{conv}"), None)
            .await
            .status(),
        204
    );
    assert_eq!(app.app.state.runs.active_runs(), 0);
    assert_eq!(
        app.get(&format!("/api/runs/{run}"), None).await.status(),
        404
    );
}

async fn artifacts_are_served_safely_and_only_to_their_owner(db: String) {
    let mut app = TestApp::with(Options {
        db_url: Some(db.clone()),
        env: vec![("REAGENT_API_KEYS", "alice:ka,bob:kb".into())],
        ..Options::default()
    })
    .await;
    app.key = Some("ka".into());
    app.llm.tool_calls(&[("c1", "report", "{}")]);
    app.llm.text("ok");
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    let events = app.events(&run, None).await;
    let end = events
        .iter()
        .find(|e| e.label() == "step:tool_end")
        .unwrap();
    let url = end.data["artifacts"][0]["url"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app.get(&url, None).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/html");
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    assert_eq!(r.headers()["content-security-policy"], "sandbox");
    assert!(r.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .contains("report.html"));
    assert_eq!(r.bytes().await.unwrap().as_ref(), b"<h1>hi</h1>");
    assert_eq!(
        error_code(app.get(&url, Some("kb")).await, 404).await,
        "not_found"
    );
}
