//! `GET /api/instances` (docs/deployment.md) and the SIGTERM hand-over: an instance told to stop lets
//! its runs go on for the shutdown grace, then releases their leases and leaves the list; another
//! instance takes the runs at its next sweep, long before the lease TTL would have lapsed.

use std::time::Duration;

use reagent::store::Store;
use reagent_mock::{MockConfig, MockProvider};
use serde_json::Value;

use super::{finished, taken_over, watch};
use crate::support::backends::{run_on, Backend};
use crate::support::child::Server;
use crate::support::cluster::Cluster;
use crate::support::eventually;

/// A TTL far above the hand-over time, so a takeover within it shows the release worked.
const TTL_S: u64 = 15;

/// `(id, runs_owned)` of each listed instance.
async fn listed(server: &Server) -> Vec<(String, i64)> {
    let list: Value = server.get_json("/api/instances").await;
    list.as_array()
        .unwrap()
        .iter()
        .map(|i| {
            assert!(
                i["started_at"].is_string() && i["last_seen"].is_string(),
                "{i}"
            );
            (
                i["id"].as_str().unwrap().to_string(),
                i["runs_owned"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_instances_are_listed_and_sigterm_hands_runs_over_at_once() {
    run_on(Backend::Postgres, |db_url| async move {
        let mock = MockProvider::start(MockConfig {
            latency: Duration::from_millis(700),
            answer_tokens: 5,
            tool_iterations: 5,
            ..MockConfig::default()
        })
        .await
        .unwrap();
        let ttl = TTL_S.to_string();
        let env = [
            ("REAGENT_LEASE_TTL_S", ttl.as_str()),
            ("REAGENT_LEASE_RENEW_S", "1"),
            ("REAGENT_SHUTDOWN_GRACE_S", "1"),
        ];
        let mut cluster = Cluster::start(3, &db_url, &mock.base_url(), &env).await;
        let names = |l: &[(String, i64)]| l.iter().map(|(i, _)| i.clone()).collect::<Vec<_>>();
        eventually("the three instances are listed", || async {
            names(&listed(cluster.at(1)).await) == ["a", "b", "c"]
        })
        .await;
        let (run, _) = watch(cluster.at(0), |e| e.label() == "step:tool_end").await;
        let owned = listed(cluster.at(2)).await;
        assert_eq!(owned, [("a".into(), 1), ("b".into(), 0), ("c".into(), 0)]);
        let store = Store::connect(&db_url).await.unwrap();
        cluster.at(0).signal("-TERM");
        let status = cluster.servers[0].wait().await;
        assert!(status.success(), "{status}");
        assert!(
            cluster.at(0).log().contains("released the leases"),
            "{}",
            cluster.at(0).log()
        );
        let (taker, after) = taken_over(&store, run, "a").await;
        eprintln!("SIGTERM exit → taken over by {taker} after {after:?}");
        assert!(after < Duration::from_secs(TTL_S / 2), "{after:?}");
        let m = super::metrics(cluster.at(1)).await;
        for name in [
            "reagent_leases_owned",
            "reagent_takeovers_total",
            "reagent_fenced_writes_total",
            "reagent_lease_renewal_failures_total",
        ] {
            assert!(m.contains(name), "{name} missing: {m}");
        }
        let left = listed(cluster.at(1)).await;
        assert_eq!(names(&left), ["b", "c"]);
        assert_eq!(left.iter().map(|(_, n)| n).sum::<i64>(), 1, "{left:?}");
        finished(&store, run).await;
        let row = store.get_run_any(run).await.unwrap().unwrap();
        assert_eq!(row.status.as_str(), "completed");
        store.close().await;
        mock.shutdown().await;
    })
    .await;
}
