//! Interrupts and recalls through another instance: truthful answers, and a recall the owner
//! does not answer is 503 and withdrawn.

use super::*;

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
