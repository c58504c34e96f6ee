//! Stopping a run from another instance: a cancel ends it cancelled, deleting its conversation
//! stops it.

use super::*;

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
