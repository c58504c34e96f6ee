//! How a run reaches the other instances and back: its stream followed on B is live and equals
//! the owner's, the owner writes a run streamed elsewhere as its events come (B asked it to),
//! and commands still arrive after the owner's listener connection is killed.

use super::*;

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

/// A metric's value in `/metrics`' text (absent: 0).
fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_writes_a_run_streamed_elsewhere_as_its_events_come() {
    run_on(Backend::Postgres, |db| async move {
        let mock = slow_mock(5, 400).await;
        let cluster = Cluster::start(3, &db, &mock.base_url(), &[]).await;
        let (a, b, c) = (cluster.at(0), cluster.at(1), cluster.at(2));
        let (_, run) = a.start_run("go").await;
        let early = "reagent_followed_writes_total";
        let before = super::super::metrics(a).await;
        assert_eq!(metric(&before, early), 0.0, "nobody follows yet: {before}");
        // B's stream asks A (NOTIFY) to write this run's events as they come.
        let reader = tokio::spawn(read_all(events(b, &run).await));
        eventually("A writes the followed run between its ticks", || async {
            metric(&super::super::metrics(a).await, early) >= 1.0
        })
        .await;
        let followed = reader.await.unwrap();
        ids_rise(&followed);
        assert_eq!(followed.first().unwrap().event, "start");
        assert_eq!(followed.last().unwrap().event, "done");
        let replay = read_all(events(a, &run).await).await;
        assert_eq!(followed, replay, "B's live stream is A's replay");
        for other in [b, c] {
            let m = super::super::metrics(other).await;
            assert_eq!(metric(&m, early), 0.0, "only the owner writes early: {m}");
        }
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
