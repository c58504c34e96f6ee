//! Takeover (docs/deployment.md): the owner of a run dies (kill -9) or pauses past its lease (SIGSTOP)
//! in the run's tool loop; another instance takes the run with a new epoch and finishes it from
//! its checkpoint. A paused owner that wakes up cannot write for the run any more.

use std::time::Duration;

use reagent::store::Store;
use reagent_mock::{MockConfig, MockProvider};

use super::{
    check_stream, events_until_done, finished, metrics, replay, taken_over, watch, LEASE_ENV, TTL,
};
use crate::support::backends::{run_on, Backend};
use crate::support::cluster::Cluster;
use crate::support::sse::Sse;

/// Three tool iterations, each model call taking `latency`, then a short streamed answer.
async fn mock(latency: Duration) -> MockProvider {
    MockProvider::start(MockConfig {
        latency,
        tokens_per_s: 200.0,
        answer_tokens: 20,
        tool_iterations: 3,
        ..MockConfig::default()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_kill_9_of_the_owner_another_instance_finishes_the_run() {
    run_on(Backend::Postgres, |db_url| async move {
        let mock = mock(Duration::from_millis(300)).await;
        let mut cluster = Cluster::start(3, &db_url, &mock.base_url(), &LEASE_ENV).await;
        let (run, seen) = watch(cluster.at(0), |e| e.label() == "step:tool_end").await;
        cluster.servers[0].kill9().await;
        let store = Store::connect(&db_url).await.unwrap();
        let (taker, after) = taken_over(&store, run, "a").await;
        eprintln!("kill -9 → taken over by {taker} after {after:?}");
        // Lapsed within the TTL of the last renewal, found by the next sweep (every second).
        assert!(after < TTL + Duration::from_secs(3), "{after:?}");
        // A client resumes on the survivor that did not take the run.
        let survivor = if taker == "b" { 2 } else { 1 };
        let last = seen.last().unwrap().id;
        let rest = events_until_done(cluster.at(survivor), run, last).await;
        let resumed: Vec<&Sse> = rest
            .iter()
            .filter(|e| e.label() == "step:resumed")
            .collect();
        assert_eq!(resumed.len(), 1, "one resumed step: {rest:?}");
        assert_eq!(resumed[0].data["instance"], taker.as_str());
        let mut stream: Vec<Sse> = seen.clone();
        stream.extend(rest.iter().cloned());
        let ids: Vec<u64> = stream.iter().map(|e| e.id).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        let done = rest.last().unwrap();
        assert_eq!(done.data["status"], "completed", "{:?}", done.data);
        assert_eq!(done.data["tool_calls"], 3, "{:?}", done.data);
        let full = replay(cluster.at(survivor), run).await;
        check_stream(run, &seen, &full);
        let taker_at = if taker == "b" { 1 } else { 2 };
        assert!(metrics(cluster.at(taker_at))
            .await
            .contains("reagent_takeovers_total 1"));
        store.close().await;
        mock.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_paused_owner_is_fenced_and_the_run_ends_once() {
    run_on(Backend::Postgres, |db_url| async move {
        let mock = mock(Duration::from_millis(400)).await;
        let cluster = Cluster::start(3, &db_url, &mock.base_url(), &LEASE_ENV).await;
        let (run, seen) = watch(cluster.at(0), |e| e.label() == "step:tool_end").await;
        // Paused mid-loop (a model call of its in flight) past its lease.
        cluster.at(0).signal("-STOP");
        let store = Store::connect(&db_url).await.unwrap();
        let (taker, _) = taken_over(&store, run, "a").await;
        finished(&store, run).await;
        cluster.at(0).signal("-CONT");
        // Awake, the old owner finds its lease gone: it stops the run without writing.
        crate::support::eventually("the old owner refuses to write for the run", || async {
            let log = cluster.at(0).log();
            log.contains("fenced") && log.contains(&run.to_string())
        })
        .await;
        let taker_at = if taker == "b" { 1 } else { 2 };
        let full = replay(cluster.at(taker_at), run).await;
        check_stream(run, &seen, &full);
        let resumed: Vec<&Sse> = full
            .iter()
            .filter(|e| e.label() == "step:resumed")
            .collect();
        assert_eq!(resumed.len(), 1);
        assert_eq!(resumed[0].data["instance"], taker.as_str());
        // Exactly once: one `done` stored, its status the row's, nothing written after it.
        let stored = store.list_events(run, 0).await.unwrap();
        let dones: Vec<_> = stored.iter().filter(|e| e.name == "done").collect();
        assert_eq!(dones.len(), 1);
        assert_eq!(stored.last().unwrap().name, "done");
        let row = store.get_run_any(run).await.unwrap().unwrap();
        assert!(dones[0]
            .data
            .contains(&format!("\"status\":\"{}\"", row.status.as_str())));
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(store.list_events(run, 0).await.unwrap(), stored);
        // The old owner no longer counts the run as its own.
        let fenced = metrics(cluster.at(0)).await;
        let fenced = fenced
            .lines()
            .find(|l| l.starts_with("reagent_fenced_writes_total"))
            .unwrap_or("reagent_fenced_writes_total (absent)")
            .to_string();
        eprintln!("after SIGCONT the old owner shows {fenced}");
        crate::support::eventually("the old owner owns no run", || async {
            metrics(cluster.at(0))
                .await
                .contains("reagent_leases_owned 0")
        })
        .await;
        store.close().await;
        mock.shutdown().await;
    })
    .await;
}

/// An instance restarted under its name after kill -9 takes the runs leased to that name at
/// once (its previous process's), without waiting for their lease to lapse.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_restarted_instance_resumes_its_own_runs_at_once() {
    run_on(Backend::Postgres, |db_url| async move {
        let mock = mock(Duration::from_millis(300)).await;
        let env = [
            ("REAGENT_LEASE_TTL_S", "30"),
            ("REAGENT_LEASE_RENEW_S", "1"),
        ];
        let mut cluster = Cluster::start(1, &db_url, &mock.base_url(), &env).await;
        let (run, seen) = watch(cluster.at(0), |e| e.label() == "step:tool_end").await;
        cluster.servers[0].kill9().await;
        let started = tokio::time::Instant::now();
        cluster.restart(0).await;
        let rest = events_until_done(cluster.at(0), run, seen.last().unwrap().id).await;
        let took = started.elapsed();
        eprintln!("kill -9, restart under the same name → run done after {took:?}");
        assert!(took < Duration::from_secs(20), "{took:?}");
        assert_eq!(rest.last().unwrap().data["status"], "completed");
        let resumed = rest.iter().filter(|e| e.label() == "step:resumed").count();
        assert_eq!(resumed, 1);
        let full = replay(cluster.at(0), run).await;
        check_stream(run, &seen, &full);
        mock.shutdown().await;
    })
    .await;
}
