//! Every request about a run works on every instance (SPEC §11): three real instances on one
//! fresh PostgreSQL database, the run started on A (its owner) while a slow mock LLM keeps it
//! in flight, and its stream, interrupts, recalls, approvals, cancel and the conversation's
//! delete sent through B or C — which reach A only through command and approval rows and
//! `LISTEN/NOTIFY` (plus the owner's safety tick), and read A's events from the database.

use std::time::Duration;

use axum::routing;
use axum::{Json, Router};
use reagent::testing::mock_provider::{MockConfig, MockProvider};
use serde_json::{json, Value};

use crate::support::backends::{run_on, Backend};
use crate::support::child::Server;
use crate::support::cluster::Cluster;
use crate::support::eventually;
use crate::support::sse::{read_all, read_until, Sse};
use crate::support::target::Target;

/// A run of `tools` calculator iterations, each LLM call `latency` long: slow enough that
/// commands arrive mid-flight.
async fn slow_mock(tools: usize, latency_ms: u64) -> MockProvider {
    MockProvider::start(MockConfig {
        latency: Duration::from_millis(latency_ms),
        tokens_per_s: 100.0,
        answer_tokens: 20,
        tool_iterations: tools,
        ..MockConfig::default()
    })
    .await
    .unwrap()
}

async fn post(server: &Server, path: &str, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(server.url(path))
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn get(server: &Server, path: &str) -> reqwest::Response {
    reqwest::get(server.url(path)).await.unwrap()
}

async fn delete(server: &Server, path: &str) -> reqwest::Response {
    reqwest::Client::new()
        .delete(server.url(path))
        .send()
        .await
        .unwrap()
}

async fn events(server: &Server, run: &str) -> reqwest::Response {
    let r = get(server, &format!("/api/runs/{run}/events")).await;
    assert_eq!(r.status(), 200);
    r
}

/// Reads `server`'s stream of `run` until an event matches `stop`.
async fn until(server: &Server, run: &str, stop: impl FnMut(&Sse) -> bool) -> Vec<Sse> {
    read_until(events(server, run).await, stop).await.0
}

/// Three instances with a slow mock, and a run started on A (its owner) whose first tool result
/// B has streamed: the moment the tests send their commands through B or C. Returns the mock,
/// the cluster, the conversation id and the run id.
async fn in_flight(
    db: &str,
    tools: usize,
    latency_ms: u64,
) -> (MockProvider, Cluster, String, String) {
    let mock = slow_mock(tools, latency_ms).await;
    let cluster = Cluster::start(3, db, &mock.base_url(), &[]).await;
    let (conv, run) = cluster.at(0).start_run("go").await;
    until(cluster.at(1), &run, |e| e.label() == "step:tool_end").await;
    (mock, cluster, conv, run)
}

/// Sends an interrupt through `server` to `path`: its id, once accepted (202).
async fn interrupt(server: &Server, path: &str, content: &str) -> String {
    let r = post(server, path, json!({"content": content})).await;
    assert_eq!(r.status(), 202);
    let body: Value = r.json().await.unwrap();
    body["id"].as_str().unwrap().to_string()
}

async fn status(server: &Server, run: &str) -> String {
    let row: Value = get(server, &format!("/api/runs/{run}"))
        .await
        .json()
        .await
        .unwrap();
    row["status"].as_str().unwrap_or_default().to_string()
}

fn ids_rise(events: &[Sse]) {
    for w in events.windows(2) {
        assert!(
            w[0].id < w[1].id,
            "ids strictly increase: {} then {}",
            w[0].id,
            w[1].id
        );
    }
}

/// The `step:interrupt` events' ids.
fn drained(events: &[Sse]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.label() == "step:interrupt")
        .flat_map(|e| e.data["ids"].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(String::from))
        .collect()
}

async fn error_code(r: reqwest::Response, status: u16) -> String {
    assert_eq!(r.status().as_u16(), status);
    let body: Value = r.json().await.unwrap();
    body["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_followed_on_another_instance_is_live_and_equals_the_owners() {
    run_on(Backend::Postgres, |db| async move {
        let mock = slow_mock(3, 400).await;
        let cluster = Cluster::start(3, &db, &mock.base_url(), &[]).await;
        let (a, b, c) = (cluster.at(0), cluster.at(1), cluster.at(2));
        let (_, run) = a.start_run("go").await;
        let stream = events(b, &run).await;
        // Read on B while the run goes on: the first tool result arrives before the end.
        let (first, _) = read_until(stream, |e| e.label() == "step:tool_end").await;
        assert_eq!(first.last().unwrap().label(), "step:tool_end");
        assert_eq!(
            status(c, &run).await,
            "running",
            "B's events came while the run went on"
        );
        let after = first.last().unwrap().id;
        let rest = read_all(
            reqwest::get(b.url(&format!("/api/runs/{run}/events?after={after}")))
                .await
                .unwrap(),
        )
        .await;
        let followed: Vec<Sse> = first.into_iter().chain(rest).collect();
        ids_rise(&followed);
        assert_eq!(followed.first().unwrap().event, "start");
        assert_eq!(followed.last().unwrap().event, "done");
        assert_eq!(followed.last().unwrap().data["status"], "completed");
        let replay = read_all(events(a, &run).await).await;
        assert_eq!(followed, replay, "B's live stream is A's replay");
        mock.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupts_and_recalls_through_another_instance_are_truthful() {
    run_on(Backend::Postgres, |db| async move {
        let (mock, cluster, conv, run) = in_flight(&db, 3, 1500).await;
        let (b, c) = (cluster.at(1), cluster.at(2));
        // Right after a tool result: the next LLM call takes 1.5 s, the interrupts stay pending.
        let path = format!("/api/conversations/{conv}/interrupt");
        let r = post(c, &path, json!({"content": "recall me"})).await;
        assert_eq!(r.status(), 202);
        let recalled: Value = r.json().await.unwrap();
        assert_eq!(recalled["run_id"], run.as_str());
        let recalled = recalled["id"].as_str().unwrap().to_string();
        let r = delete(c, &format!("{path}/{recalled}")).await;
        assert_eq!(r.status(), 200, "a pending interrupt is recalled through C");
        assert_eq!(r.json::<Value>().await.unwrap(), json!({"recalled": true}));

        let taken = interrupt(c, &path, "take me").await;
        let seen = until(b, &run, |e| {
            drained(std::slice::from_ref(e)).contains(&taken)
        })
        .await;
        assert!(
            drained(&seen).contains(&taken),
            "the run took C's interrupt"
        );
        let r = delete(c, &format!("{path}/{taken}")).await;
        assert_eq!(error_code(r, 409).await, "conflict", "a drained interrupt");
        let unknown = uuid::Uuid::new_v4();
        let r = delete(c, &format!("{path}/{unknown}")).await;
        assert_eq!(error_code(r, 404).await, "not_found");

        let all = read_all(events(b, &run).await).await;
        assert_eq!(all.last().unwrap().data["status"], "completed");
        assert!(
            !drained(&all).contains(&recalled),
            "a recalled interrupt never takes effect"
        );
        let kept: Value = get(c, &format!("/api/conversations/{conv}"))
            .await
            .json()
            .await
            .unwrap();
        let ids: Vec<&str> = kept["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["id"].as_str())
            .collect();
        assert!(!ids.contains(&recalled.as_str()), "{ids:?}");
        assert!(ids.contains(&taken.as_str()), "{ids:?}");
        mock.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_listed_and_decided_on_another_instance() {
    run_on(Backend::Postgres, |db| async move {
        let routes = Router::new().route(
            "/deploy",
            routing::post(|| async { Json(json!({"ok": true})) }),
        );
        let tool = Target::serve("127.0.0.1", routes).await;
        let mock = MockProvider::start(MockConfig {
            latency: Duration::from_millis(50),
            answer_tokens: 5,
            tool_iterations: 1,
            tool: "deploy".into(),
            tool_args: "{}".into(),
            ..MockConfig::default()
        })
        .await
        .unwrap();
        let env = [("REAGENT_HTTP_ALLOW_PRIVATE", "true")];
        let mut cluster = Cluster::start(3, &db, &mock.base_url(), &env).await;
        let config = format!(
            "[[tools.http]]\nname = \"deploy\"\ndescription = \"deploys\"\nurl = \"{}\"\n\
             requires_approval = true\n",
            tool.url("/deploy")
        );
        for i in 0..3 {
            std::fs::write(cluster.dir(i).join("config.toml"), &config).unwrap();
            cluster.restart(i).await;
        }
        let (a, b, c) = (cluster.at(0), cluster.at(1), cluster.at(2));
        for (approve, decider) in [(true, b), (false, c)] {
            let (_, run) = a.start_run("ship it").await;
            let seen = until(a, &run, |e| e.label() == "step:approval_required").await;
            let id = seen.last().unwrap().data["approval_id"]
                .as_str()
                .unwrap()
                .to_string();
            let listed: Value = get(decider, "/api/approvals").await.json().await.unwrap();
            let listed = listed.as_array().unwrap();
            assert!(
                listed
                    .iter()
                    .any(|p| p["id"] == id.as_str() && p["run_id"] == run.as_str()),
                "listed on another instance: {listed:?}"
            );
            let path = format!("/api/approvals/{id}");
            let r = post(
                decider,
                &path,
                json!({"approve": approve, "reason": "policy"}),
            )
            .await;
            assert_eq!(r.status(), 200);
            let r = post(a, &path, json!({"approve": true})).await;
            assert_eq!(
                error_code(r, 404).await,
                "not_found",
                "decided once, everywhere"
            );
            let all = read_all(events(c, &run).await).await;
            assert_eq!(all.last().unwrap().data["status"], "completed");
            let end = all.iter().find(|e| e.label() == "step:tool_end").unwrap();
            assert_eq!(end.data["blocked"], !approve, "{:?}", end.data);
            let left: Value = get(b, "/api/approvals").await.json().await.unwrap();
            assert_eq!(left, json!([]));
        }
        assert_eq!(tool.hits(), 1, "only the approved call ran");
        mock.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_through_another_instance_ends_the_run_cancelled() {
    run_on(Backend::Postgres, |db| async move {
        let (mock, cluster, _, run) = in_flight(&db, 5, 800).await;
        let (b, c) = (cluster.at(1), cluster.at(2));
        let r = post(c, &format!("/api/runs/{run}/cancel"), json!({})).await;
        assert_eq!(r.status(), 202);
        assert_eq!(
            r.json::<Value>().await.unwrap(),
            json!({"run_id": run, "cancelling": true})
        );
        let all = read_all(events(b, &run).await).await;
        assert_eq!(all.last().unwrap().data["status"], "cancelled");
        assert_eq!(status(c, &run).await, "cancelled");
        let r = post(c, &format!("/api/runs/{run}/cancel"), json!({})).await;
        assert_eq!(error_code(r, 409).await, "conflict", "a finished run");
        mock.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_arrive_after_the_owners_listener_connection_is_killed() {
    run_on(Backend::Postgres, |db| async move {
        let (mock, cluster, conv, run) = in_flight(&db, 4, 1500).await;
        let (b, c) = (cluster.at(1), cluster.at(2));
        let pool = sqlx::PgPool::connect(&db).await.unwrap();
        let killed: Vec<(bool,)> = sqlx::query_as(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND query LIKE 'LISTEN%'",
        )
        .fetch_all(&pool)
        .await
        .unwrap();
        assert!(killed.len() >= 3, "every instance's listener: {killed:?}");
        let pool = &pool;
        eventually("the listeners connected again", || async move {
            let listening: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND query LIKE 'LISTEN%'",
            )
            .fetch_one(pool)
            .await
            .unwrap();
            listening >= 3
        })
        .await;
        pool.close().await;
        let path = format!("/api/conversations/{conv}/interrupt");
        let id = interrupt(c, &path, "still heard").await;
        let seen = until(b, &run, |e| drained(std::slice::from_ref(e)).contains(&id)).await;
        assert!(drained(&seen).contains(&id));
        let r = post(c, &format!("/api/runs/{run}/cancel"), json!({})).await;
        assert_eq!(r.status(), 202);
        let all = read_all(events(b, &run).await).await;
        assert_eq!(all.last().unwrap().data["status"], "cancelled");
        mock.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_conversation_on_another_instance_stops_its_run() {
    run_on(Backend::Postgres, |db| async move {
        let mock = slow_mock(5, 800).await;
        let cluster = Cluster::start(3, &db, &mock.base_url(), &[]).await;
        let (a, b, c) = (cluster.at(0), cluster.at(1), cluster.at(2));
        let (conv, run) = a.start_run("go").await;
        let owner_stream = events(a, &run).await;
        until(a, &run, |e| e.label() == "step:tool_end").await;
        let r = delete(b, &format!("/api/conversations/{conv}")).await;
        assert_eq!(r.status(), 204);
        let on_a = read_all(owner_stream).await;
        assert_eq!(
            on_a.last().unwrap().data["status"],
            "cancelled",
            "the run ended"
        );
        for server in [a, b, c] {
            let r = get(server, &format!("/api/conversations/{conv}")).await;
            assert_eq!(r.status(), 404);
            let r = get(server, &format!("/api/runs/{run}")).await;
            assert_eq!(r.status(), 404);
        }
        let metrics = eventually("A has no active run", || async {
            let text = get(a, "/metrics").await.text().await.unwrap();
            text.lines()
                .any(|l| l == "reagent_active_runs 0")
                .then_some(text)
        })
        .await;
        assert!(!metrics.is_empty());
        mock.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recall_the_owner_does_not_answer_is_503_and_withdrawn() {
    run_on(Backend::Postgres, |db| async move {
        let (mock, cluster, conv, run) = in_flight(&db, 3, 1500).await;
        let (a, b, c) = (cluster.at(0), cluster.at(1), cluster.at(2));
        let path = format!("/api/conversations/{conv}/interrupt");
        let id = interrupt(c, &path, "keep me").await;
        let pool = sqlx::PgPool::connect(&db).await.unwrap();
        let pool = &pool;
        eventually("A queued the interrupt", || async move {
            let pending: i64 =
                sqlx::query_scalar("SELECT count(*) FROM run_commands WHERE done_at IS NULL")
                    .fetch_one(pool)
                    .await
                    .unwrap();
            pending == 0
        })
        .await;
        a.signal("-STOP");
        let r = delete(c, &format!("{path}/{id}")).await;
        a.signal("-CONT");
        assert_eq!(
            error_code(r, 503).await,
            "unavailable",
            "the owner did not answer"
        );
        let seen = until(b, &run, |e| e.event == "done").await;
        assert!(
            drained(&seen).contains(&id),
            "the withdrawn recall took no effect"
        );
        assert_eq!(seen.last().unwrap().data["status"], "completed");
        pool.close().await;
        mock.shutdown().await;
    })
    .await;
}
