//! Prices, budgets and the per-tenant run cap through the HTTP API (docs/api.md): cost in
//! `done`, `GET /api/runs/{id}` and `GET /api/usage`; a run whose next call does not fit ends
//! `budget_exceeded` with an answer; a tenant over budget is refused 429 `budget_exceeded` with
//! `Retry-After` on `/api` and `insufficient_quota` on `/v1`; `too_many_active_runs`.

use super::*;
use reagent::llm::{ChatResponse, Usage};
use reagent::testing::Turn;

on_both_backends!(
    a_spent_budget_ends_the_run_and_refuses_the_next,
    the_usage_report_sums_calls_by_day_model_and_agent,
    the_openai_facades_report_the_cost_with_the_usage,
    a_budget_below_one_calls_reservation_refuses_new_runs_and_creates_nothing,
);

/// A price for the scripted model and a daily budget of `tokens` for every tenant.
fn budget_app(db: &str, tokens: u64) -> Options {
    Options {
        db_url: Some(db.to_string()),
        llm: ScriptedLlm::native().with_context(128_000, 100),
        toml: format!(
            "[[models]]\nname = \"scripted\"\nprice = {{ input = 2, output = 8 }}\n\n\
             [[budgets]]\ntenant = \"*\"\nwindow = \"day\"\ntokens = {tokens}\n"
        ),
        ..Options::default()
    }
}

/// A budget of 3,000 tokens a day and a model that may write 4,096 (the scripted model's
/// `max_output_tokens`): no call of it fits, however little was spent.
fn small_budget_app(db: &str) -> Options {
    Options {
        db_url: Some(db.to_string()),
        toml: "[[budgets]]\ntenant = \"*\"\nwindow = \"day\"\ntokens = 3000\n".into(),
        ..Options::default()
    }
}

/// A loop reply that used `prompt` tokens (more than any reservation: the estimate is short).
fn reply_using(app: &TestApp, prompt: u64) {
    app.llm.push(Turn::Reply(
        ChatResponse {
            content: "Paris is the capital.".into(),
            finish_reason: Some("stop".into()),
            usage: Usage::call(prompt, 20),
            ..ChatResponse::default()
        },
        Duration::ZERO,
    ));
}

async fn a_spent_budget_ends_the_run_and_refuses_the_next(db: String) {
    let app = TestApp::with(budget_app(&db, 1_000)).await;
    reply_using(&app, 2_000);
    let conv = app.create_conversation(None).await;
    let run = app
        .start_run(&conv, json!({"query": "capital?"}), None)
        .await;
    let events = app.wait_for(&run, |e| e.event == "done").await;
    let done = &events.last().unwrap().data;
    // The loop call spent the budget, so the synthesis call did not fit: the answer is the
    // loop's own, and the run says why it ended.
    assert_eq!(done["status"], "budget_exceeded", "{done}");
    assert_eq!(done["answer"], "Paris is the capital.");
    assert_eq!(done["usage"]["llm_calls"], 1, "{done}");
    // 2,000 in at $2/M and 20 out at $8/M.
    let cost = done["usage"]["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.00416).abs() < 1e-9, "{done}");
    assert_eq!(done["usage"]["unpriced_calls"], 0);
    let shown: Value = app.get_json(&format!("/api/runs/{run}"), None).await;
    assert_eq!(shown["status"], "budget_exceeded");
    assert_eq!(shown["usage"]["cost_usd"], done["usage"]["cost_usd"]);

    let conv = app.create_conversation(None).await;
    let r = app
        .post(
            &format!("/api/conversations/{conv}/runs"),
            json!({"query": "again"}),
            None,
        )
        .await;
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=86_400).contains(&retry), "{retry}");
    assert_eq!(error_code(r, 429).await, "budget_exceeded");
    let r = app
        .post(
            "/v1/chat/completions",
            json!({"model": "reagent", "messages": [{"role": "user", "content": "hi"}]}),
            None,
        )
        .await;
    assert_eq!(r.status(), 429);
    assert!(r.headers().contains_key("retry-after"));
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["type"], "insufficient_quota", "{body}");
    assert_eq!(body["error"]["code"], "insufficient_quota", "{body}");
    for stream in [false, true] {
        let r = app
            .post(
                "/v1/responses",
                json!({"model": "reagent", "input": "hi", "stream": stream}),
                None,
            )
            .await;
        assert_eq!(r.status(), 429, "stream {stream}");
        assert!(r.headers().contains_key("retry-after"));
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["type"], "insufficient_quota", "{body}");
        assert_eq!(body["error"]["code"], "insufficient_quota", "{body}");
    }

    let usage: Value = app.get_json("/api/usage", None).await;
    let budget = &usage["budgets"][0];
    assert_eq!(
        (budget["window"].as_str(), budget["tokens"].as_u64()),
        (Some("day"), Some(1_000))
    );
    assert_eq!(budget["spent_tokens"], 2_020, "{usage}");
    assert_eq!(budget["remaining_tokens"], 0, "{usage}");
    assert_eq!(budget["reserved_tokens"], 0, "{usage}");
    app.stop().await;
}

async fn the_usage_report_sums_calls_by_day_model_and_agent(db: String) {
    let app = TestApp::with(budget_app(&db, 1_000_000)).await;
    for _ in 0..2 {
        app.llm.text("an answer");
        let conv = app.create_conversation(None).await;
        let run = app.start_run(&conv, json!({"query": "q"}), None).await;
        let events = app.wait_for(&run, |e| e.event == "done").await;
        assert_eq!(events.last().unwrap().data["status"], "completed");
    }
    // Two runs of a loop call and a synthesis call each, 10 + 5 tokens a call.
    let check = |g: &Value| {
        assert_eq!(g["llm_calls"], 4, "{g}");
        assert_eq!(g["runs"], 2, "{g}");
        assert_eq!(
            (g["prompt_tokens"].as_u64(), g["completion_tokens"].as_u64()),
            (Some(40), Some(20))
        );
        assert!(
            (g["cost_usd"].as_f64().unwrap() - 0.00024).abs() < 1e-9,
            "{g}"
        );
    };
    // The synthesis call settles in its own task, just after `done`.
    let by_model: Value = eventually("the four calls recorded", || async {
        let v: Value = app.get_json("/api/usage?group_by=model", None).await;
        (v["groups"][0]["llm_calls"] == 4).then_some(v)
    })
    .await;
    assert_eq!(by_model["groups"][0]["key"], "scripted");
    check(&by_model["groups"][0]);
    let by_day: Value = app.get_json("/api/usage", None).await;
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert_eq!(by_day["groups"][0]["key"], today.as_str());
    check(&by_day["groups"][0]);
    let by_agent: Value = app.get_json("/api/usage?group_by=agent", None).await;
    assert_eq!(by_agent["groups"][0]["key"], "reagent");
    let before: Value = app
        .get_json("/api/usage?from=2020-01-01&to=2020-02-01", None)
        .await;
    assert_eq!(before["groups"], json!([]));
    let r = app.get("/api/usage?group_by=week", None).await;
    assert_eq!(error_code(r, 400).await, "invalid_request");
    app.stop().await;
}

/// `/v1/chat/completions` and `/v1/responses` add `cost_usd` and `unpriced_calls` to OpenAI's
/// usage object: the price of exactly the tokens reported beside it.
async fn the_openai_facades_report_the_cost_with_the_usage(db: String) {
    let app = TestApp::with(budget_app(&db, 1_000_000)).await;
    let requests = [
        (
            "/v1/chat/completions",
            json!({"model": "reagent", "messages": [{"role": "user", "content": "hi"}]}),
            ("prompt_tokens", "completion_tokens"),
        ),
        (
            "/v1/responses",
            json!({"model": "reagent", "input": "hi"}),
            ("input_tokens", "output_tokens"),
        ),
    ];
    for (path, body, (input, output)) in requests {
        app.llm.text("an answer");
        let r = app.post(path, body, None).await;
        assert_eq!(r.status(), 200, "{path}");
        let reply: Value = r.json().await.unwrap();
        let usage = &reply["usage"];
        let tokens = |k: &str| usage[k].as_u64().unwrap_or_else(|| panic!("{k}: {usage}"));
        assert!(tokens(input) > 0, "{path}: {usage}");
        let expected = (tokens(input) * 2 + tokens(output) * 8) as f64 / 1e6;
        let cost = usage["cost_usd"]
            .as_f64()
            .unwrap_or_else(|| panic!("{usage}"));
        assert!((cost - expected).abs() < 1e-9, "{path}: {usage}");
        assert_eq!(usage["unpriced_calls"], 0, "{path}: {usage}");
    }
    app.stop().await;
}

/// A tenant whose budget cannot take one call of the run's model (its prompt and its
/// `max_output_tokens`) is refused before anything is stored or called, on every route: 429
/// `budget_exceeded` with `Retry-After`, `insufficient_quota` on `/v1`; `GET /api/usage` says
/// the budget is exhausted although nothing was spent.
async fn a_budget_below_one_calls_reservation_refuses_new_runs_and_creates_nothing(db: String) {
    let app = TestApp::with(small_budget_app(&db)).await;
    let conv = app.create_conversation(None).await;
    let r = app
        .post(
            &format!("/api/conversations/{conv}/runs"),
            json!({"query": "capital?"}),
            None,
        )
        .await;
    assert!(r.headers().contains_key("retry-after"));
    assert_eq!(error_code(r, 429).await, "budget_exceeded");
    let shown: Value = app
        .get_json(&format!("/api/conversations/{conv}"), None)
        .await;
    assert_eq!(shown["messages"], json!([]), "{shown}");
    let r = app.post("/api/chat", json!({"query": "hi"}), None).await;
    assert_eq!(error_code(r, 429).await, "budget_exceeded");
    let thread = json!({"threadId": "t-budget", "runId": "r1", "state": {}, "tools": [],
        "context": [], "forwardedProps": {},
        "messages": [{"id": "m1", "role": "user", "content": "hi"}]});
    let r = app.post("/ag-ui/reagent", thread, None).await;
    assert_eq!(error_code(r, 429).await, "budget_exceeded");
    let r = app
        .post(
            "/v1/chat/completions",
            json!({"model": "reagent", "messages": [{"role": "user", "content": "hi"}]}),
            None,
        )
        .await;
    assert_eq!(r.status(), 429);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "insufficient_quota", "{body}");
    let r = app
        .post(
            "/v1/responses",
            json!({"model": "reagent", "input": "hi"}),
            None,
        )
        .await;
    assert_eq!(r.status(), 429);
    // Only the conversation the client created itself exists; no model call was made.
    let list: Value = app.get_json("/api/conversations", None).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1, "{list}");
    assert!(app.llm.requests().is_empty());
    let usage: Value = app.get_json("/api/usage", None).await;
    let budget = &usage["budgets"][0];
    assert_eq!(budget["remaining_tokens"], 3000, "{usage}");
    assert_eq!(budget["exhausted"], true, "{usage}");
    app.stop().await;
}

#[tokio::test]
async fn a_tenant_at_its_cap_of_active_runs_gets_429() {
    let app = TestApp::with(Options {
        server_toml: "max_active_runs_per_tenant = 1".into(),
        ..Options::default()
    })
    .await;
    app.llm.tool_calls(&[("c1", "gate", "{}")]);
    let first = app.create_conversation(None).await;
    let run = app.start_run(&first, json!({"query": "wait"}), None).await;
    app.wait_for(&run, |e| {
        e.event == "step" && e.data["type"] == "tool_start"
    })
    .await;
    let second = app.create_conversation(None).await;
    let r = app
        .post(
            &format!("/api/conversations/{second}/runs"),
            json!({"query": "more"}),
            None,
        )
        .await;
    assert_eq!(error_code(r, 429).await, "too_many_active_runs");
    app.gate.release();
    app.wait_for(&run, |e| e.event == "done").await;
    app.llm.text("done now");
    let r = app
        .post(
            &format!("/api/conversations/{second}/runs"),
            json!({"query": "more"}),
            None,
        )
        .await;
    assert_eq!(r.status(), 202);
    app.stop().await;
}
