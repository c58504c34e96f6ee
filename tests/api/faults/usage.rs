//! Provider usage through the whole service, on both backends: counts near `u64::MAX` saturate
//! at `i64::MAX` (what both databases store), so `done.usage` and `GET /api/runs/{id}` agree;
//! a float or string count costs neither the reply nor its tool calls; a call whose usage is
//! missing (absent, zero, negative, null) is charged reagent's estimate and marked.

use super::*;

const MAX: u64 = i64::MAX as u64;

on_both_backends!(
    huge_and_odd_usage_saturates_alike_in_done_and_in_the_stored_run,
    cache_tokens_reach_done_the_stored_run_metrics_and_v1,
    calls_without_usage_are_charged_an_estimate_and_marked,
);

async fn huge_and_odd_usage_saturates_alike_in_done_and_in_the_stored_run(db_url: String) {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(
        FakeReply::tool_calls(vec![("c1", "echo", r#"{"text":"one"}"#)])
            .raw_usage(json!({"prompt_tokens": u64::MAX - 1, "completion_tokens": 3})),
    );
    fake.push(
        FakeReply::tool_calls(vec![("c2", "echo", r#"{"text":"two"}"#)])
            .raw_usage(json!({"prompt_tokens": 2.5, "completion_tokens": "oops"})),
    );
    fake.set_default(
        FakeReply::text("The answer.")
            .raw_usage(json!({"prompt_tokens": u64::MAX, "completion_tokens": u64::MAX})),
    );
    let app = TestApp::with(Options {
        env: vec![
            ("LLM_BASE_URL", fake.base_url()),
            ("LLM_API_KEY", "sk-test".into()),
            ("LLM_MODEL", "fake-model".into()),
            ("REACT_COMPLETION_CHECK_MIN_TOOLS", "100".into()),
        ],
        config_models: true,
        db_url: Some(db_url),
        ..Options::default()
    })
    .await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "completed").await;
    for call in ["c1", "c2"] {
        let end = tool_ends(&events)
            .into_iter()
            .find(|e| e["call_id"] == call)
            .unwrap_or_else(|| panic!("the tool call {call} was lost: {d}"));
        assert_eq!(end["error"], false, "{end}");
    }
    let usage = &d["usage"];
    for field in ["prompt_tokens", "completion_tokens", "total_tokens"] {
        assert_eq!(usage[field], MAX, "{field}: {usage}");
    }
    let stored = app.get_json(&format!("/api/runs/{run}"), None).await;
    assert_eq!(stored["usage"], *usage, "stored {stored} vs done {d}");
    // `GET /api/usage` sums the same calls to the same bound (its sums would overflow).
    let calls = usage["llm_calls"].as_u64().unwrap();
    let report: Value = eventually("every call recorded", || async {
        let r = app.get("/api/usage", None).await;
        assert_eq!(r.status(), 200);
        let v: Value = r.json().await.unwrap();
        (v["groups"][0]["llm_calls"] == calls).then_some(v)
    })
    .await;
    for field in ["prompt_tokens", "completion_tokens", "total_tokens"] {
        assert_eq!(report["groups"][0][field], MAX, "{field}: {report}");
    }
    app.stop().await;
}

/// A provider's prompt-cache counts (OpenAI's `prompt_tokens_details.cached_tokens`, llama.cpp's
/// `cache_write_tokens`) are summed over the run into `done`, stored with it, counted on
/// `/metrics` by `type`, and reported by `/v1` where OpenAI puts them.
async fn cache_tokens_reach_done_the_stored_run_metrics_and_v1(db_url: String) {
    let fake = FakeOpenAi::start().await.unwrap();
    let cached = |read: u64, write: u64| {
        json!({"prompt_tokens": 100, "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": read, "cache_write_tokens": write}})
    };
    fake.push(
        FakeReply::tool_calls(vec![("c1", "echo", r#"{"text":"one"}"#)]).raw_usage(cached(0, 90)),
    );
    fake.set_default(FakeReply::text("The answer.").raw_usage(cached(80, 20)));
    let app = TestApp::with(Options {
        env: vec![
            ("LLM_BASE_URL", fake.base_url()),
            ("LLM_API_KEY", "sk-test".into()),
            ("LLM_MODEL", "fake-model".into()),
            ("REACT_COMPLETION_CHECK_MIN_TOOLS", "100".into()),
        ],
        config_models: true,
        db_url: Some(db_url),
        ..Options::default()
    })
    .await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "completed").await;
    let usage = &d["usage"];
    let calls = usage["llm_calls"].as_u64().unwrap();
    assert!(calls >= 2, "{usage}");
    // Every call after the first reads 80 and writes 20.
    assert_eq!(usage["cache_read_tokens"], 80 * (calls - 1), "{usage}");
    assert_eq!(
        usage["cache_write_tokens"],
        90 + 20 * (calls - 1),
        "{usage}"
    );
    let stored = app.get_json(&format!("/api/runs/{run}"), None).await;
    assert_eq!(stored["usage"], *usage, "stored {stored} vs done {d}");
    let metrics = app.get("/metrics", None).await.text().await.unwrap();
    let line = format!(
        "reagent_llm_tokens_total{{model=\"default\",type=\"cache_read\",kind=\"cache_read\"}} {}",
        80 * (calls - 1)
    );
    assert!(metrics.contains(&line), "{line} in {metrics}");
    assert!(
        metrics.contains(
            "reagent_llm_tokens_total{model=\"default\",type=\"prompt\",kind=\"prompt\"}"
        ),
        "{metrics}"
    );

    let before = usage["cache_read_tokens"].as_u64().unwrap();
    let r = app
        .post(
            "/v1/chat/completions",
            json!({"model": "reagent", "messages": [{"role": "user", "content": "again"}]}),
            None,
        )
        .await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    let cached_tokens = &body["usage"]["prompt_tokens_details"]["cached_tokens"];
    assert!(
        cached_tokens.as_u64().is_some_and(|n| n > 0 && n % 80 == 0),
        "{body}"
    );
    assert!(before > 0);
    app.stop().await;
}

/// A provider that reports no usage — absent, zeros, negatives, nulls — is charged reagent's
/// estimate of each call (its prompt and its answer), marked in `estimated_calls`: the run,
/// `GET /api/usage` and the budget count it, and the cost is a price of it, not a known 0.
async fn calls_without_usage_are_charged_an_estimate_and_marked(db_url: String) {
    let fake = FakeOpenAi::start().await.unwrap();
    let toml = format!(
        "[[models]]\nname = \"fake\"\nbase_url = \"{}\"\nmodel = \"fake-model\"\n\
         default = true\nprice = {{ input = 2, output = 8 }}\n\n\
         [[budgets]]\ntenant = \"*\"\nwindow = \"day\"\ntokens = 1000000\n",
        fake.base_url()
    );
    let app = TestApp::with(Options {
        toml,
        config_models: true,
        db_url: Some(db_url),
        ..Options::default()
    })
    .await;
    let reports = [
        None,
        Some(json!({"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0})),
        Some(json!({"prompt_tokens": -40, "completion_tokens": -3})),
        Some(json!({"prompt_tokens": null, "completion_tokens": null})),
    ];
    let query = "Where is the invoice of March? ".repeat(40);
    let mut charged = 0;
    let mut calls = 0;
    for report in reports {
        let reply = FakeReply::text("It is in the March folder, filed under invoices.");
        fake.set_default(match &report {
            None => reply.no_usage(),
            Some(raw) => reply.raw_usage(raw.clone()),
        });
        let (run, events) = run(&app, &query).await;
        let d = check_end(&app, &run, &events, "completed").await;
        let usage = &d["usage"];
        let n = usage["llm_calls"].as_u64().unwrap();
        // The loop's streamed reply is the answer (`synthesis = "auto"`): one call.
        assert!(n >= 1, "{usage}");
        assert_eq!(usage["estimated_calls"], n, "{report:?}: {usage}");
        // The query alone is ~300 tokens; the answer about 12.
        let prompt = usage["prompt_tokens"].as_u64().unwrap();
        assert!(prompt >= 300 * n, "{report:?}: {usage}");
        assert!(usage["completion_tokens"].as_u64().unwrap() >= n, "{usage}");
        assert!(usage["cost_usd"].as_f64().unwrap() > 0.0, "{usage}");
        let stored = app.get_json(&format!("/api/runs/{run}"), None).await;
        assert_eq!(stored["usage"], *usage, "stored {stored} vs done {d}");
        charged += usage["total_tokens"].as_u64().unwrap();
        calls += n;
    }
    // The last call settles in its own task, just after `done`.
    let report: Value = eventually("every call recorded", || async {
        let v: Value = app.get_json("/api/usage", None).await;
        (v["groups"][0]["llm_calls"] == calls).then_some(v)
    })
    .await;
    let group = &report["groups"][0];
    assert_eq!(group["estimated_calls"], calls, "{report}");
    assert_eq!(group["total_tokens"], charged, "{report}");
    let budget = &report["budgets"][0];
    assert_eq!(budget["spent_tokens"], charged, "{report}");
    app.stop().await;
}
