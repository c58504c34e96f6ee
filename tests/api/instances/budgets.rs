//! A budget shared by two real instances on one PostgreSQL database (docs/configuration.md
//! `[[budgets]]`): many concurrent runs of one tenant against room for a few calls. Each call
//! reports no prompt count and the most output tokens it may write, so reagent charges it its
//! own prompt estimate plus `max_output_tokens`: exactly what it reserved. The docs' bound on
//! overshooting ("what calls in flight use beyond their reservation") is then zero, so the
//! window's spend past its limit would mean a reservation admitted past it — as when the calls
//! batched into one transaction are checked against the window's totals before the batch
//! instead of one after the other.

use std::sync::Arc;

use reagent::store::Store;
use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};
use serde_json::json;

use crate::support::backends::{run_on, Backend};
use crate::support::child::Server;
use crate::support::cluster::Cluster;
use crate::support::sse::read_all;

/// Each call's most output tokens, reported as its completion.
const MAX_OUTPUT: u64 = 100;
/// The day budget of every tenant: a handful of calls' worst case.
const LIMIT: i64 = 3_000;
const RUNS: usize = 48;

/// What became of one run: `None` when its start was refused (429), else its final status.
async fn chat(server: &Server) -> Option<String> {
    let r = reqwest::Client::new()
        .post(server.url("/api/chat"))
        .json(&json!({"query": "one short question"}))
        .send()
        .await
        .unwrap();
    if r.status() == 429 {
        return None;
    }
    assert_eq!(r.status(), 200);
    let events = read_all(r).await;
    let done = events.last().filter(|e| e.event == "done").unwrap();
    Some(done.data["status"].as_str().unwrap().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_two_instances_never_admit_past_a_shared_budget() {
    run_on(Backend::Postgres, |db_url| async move {
        let llm = FakeOpenAi::start().await.unwrap();
        llm.set_default(FakeReply::text("An answer.").usage(0, MAX_OUTPUT).delay(30));
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("budgets.toml");
        let toml = format!("[[budgets]]\ntenant = \"*\"\nwindow = \"day\"\ntokens = {LIMIT}\n");
        std::fs::write(&config, toml).unwrap();
        let config = config.display().to_string();
        let max_output = MAX_OUTPUT.to_string();
        let env = [
            ("REAGENT_CONFIG", config.as_str()),
            ("LLM_MAX_OUTPUT_TOKENS", max_output.as_str()),
        ];
        let cluster = Arc::new(Cluster::start(2, &db_url, &llm.base_url(), &env).await);
        let runs: Vec<_> = (0..RUNS)
            .map(|i| {
                let cluster = cluster.clone();
                tokio::spawn(async move { chat(cluster.at(i % 2)).await })
            })
            .collect();
        let mut outcomes = Vec::new();
        for r in runs {
            outcomes.push(r.await.unwrap());
        }
        let store = Store::connect(&db_url).await.unwrap();
        let day = reagent::config::BudgetWindow::Day.start(chrono::Utc::now());
        let s = &store
            .budget_spend("", &[("day", day.timestamp_micros())])
            .await
            .unwrap()[0];
        assert!(s.spent_tokens <= LIMIT, "admitted past the limit: {s:?}");
        assert_eq!(s.reserved_tokens, 0, "a reservation leaked: {s:?}");
        let completed = outcomes
            .iter()
            .filter(|o| o.as_deref() == Some("completed"))
            .count();
        let cut = outcomes.len() - completed;
        assert!(completed > 0 && cut > 0, "{outcomes:?}");
        // Every call the model answered was admitted and settled: none was made unbooked.
        let calls = store
            .usage(Some(""), 0, i64::MAX, reagent::store::UsageGroup::Model)
            .await
            .unwrap()
            .iter()
            .map(|r| r.llm_calls)
            .sum::<i64>();
        assert_eq!(calls as usize, llm.request_count(), "{s:?}");
        assert_eq!(completed, llm.request_count(), "one call per completed run");
        store.close().await;
    })
    .await;
}
