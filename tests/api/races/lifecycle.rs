//! Runs racing each other and their conversation: cancel vs completion, two starts at once,
//! start vs delete.

use super::*;

on_both_backends!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    cancel_vs_completion,
    two_runs_started_at_once,
    start_vs_delete,
);

async fn cancel_vs_completion(db: String) {
    let (app, _fake) = app(&db).await;
    let (mut cancelled, mut completed) = (0, 0);
    for round in 0..ROUNDS {
        let conv = app.create_conversation(None).await;
        let run = app.start_run(&conv, json!({"query": "go"}), None).await;
        // From "at once" to "after the run is over" (a run takes two 2 ms model calls plus
        // HTTP and database work).
        let ms = (round % 9) as u64 * 3;
        if ms > 0 {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        let c = app.cancel(&run).await;
        let cancel_status = c.status().as_u16();
        assert!(
            cancel_status == 202 || cancel_status == 409,
            "cancel answered {cancel_status}"
        );
        let events = app.events(&run, None).await;
        let d = done(&events).clone();
        let status = d["status"].as_str().unwrap();
        match status {
            "cancelled" => {
                assert_eq!(cancel_status, 202, "cancelled without an accepted cancel");
                cancelled += 1;
            }
            "completed" => completed += 1,
            other => panic!("round {round}: unexpected terminal status {other}"),
        }
        let stored = stored_events(&app, &run).await;
        assert_eq!(
            stored.iter().filter(|e| e.name == "done").count(),
            1,
            "round {round}: done persisted exactly once"
        );
        assert_eq!(
            stored.len(),
            events.len(),
            "round {round}: live and stored logs differ"
        );
        let seqs: Vec<i64> = stored.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=stored.len() as i64).collect::<Vec<_>>());
        let row: Value = app.get_json(&format!("/api/runs/{run}"), None).await;
        assert_eq!(
            row["status"], status,
            "round {round}: GET run disagrees with done"
        );
        // Replaying from the database tells the same story.
        let replay = app.events(&run, None).await;
        assert_eq!(done(&replay)["status"], status);
        // A second cancel on the finished run is refused.
        assert_eq!(app.cancel(&run).await.status(), 409);
    }
    eprintln!("cancel vs completion: {cancelled} cancelled, {completed} completed");
    assert_eq!(app.app.state.runs.active_runs(), 0);
}

async fn two_runs_started_at_once(db: String) {
    let (app, fake) = app(&db).await;
    for round in 0..ROUNDS {
        // The winner stops in the gate tool, so the loser cannot start after it finished.
        fake.push(FakeReply::tool_calls(vec![("g", "gate", "{}")]));
        let conv = app.create_conversation(None).await;
        let path = format!("/api/conversations/{conv}/runs");
        let start = |salt| {
            let (app, path) = (&app, path.clone());
            async move {
                jitter(round, salt).await;
                app.post(&path, json!({"query": format!("q{salt}")}), None)
                    .await
            }
        };
        let (a, b) = tokio::join!(start(0), start(1));
        let mut statuses = [a.status().as_u16(), b.status().as_u16()];
        let bodies: [Value; 2] = [a.json().await.unwrap(), b.json().await.unwrap()];
        statuses.sort_unstable();
        assert_eq!(statuses, [202, 409], "round {round}: {bodies:?}");
        let loser = bodies.iter().find(|b| b.get("error").is_some()).unwrap();
        assert_eq!(loser["error"]["code"], "run_active");
        let winner = bodies.iter().find(|b| b.get("run_id").is_some()).unwrap();
        let run = winner["run_id"].as_str().unwrap();
        assert_eq!(
            messages(&app, &conv, "query").await.len(),
            1,
            "the loser left no trace"
        );
        app.gate.release();
        let events = app.events(run, None).await;
        assert_eq!(done(&events)["status"], "completed");
    }
}

/// Starting a run while its conversation is deleted: the start is 202 or 404, never a 500, and
/// a run that did start is stopped by the delete (no run left going on a deleted conversation).
async fn start_vs_delete(db: String) {
    let (app, fake) = app(&db).await;
    let (mut started, mut refused) = (0, 0);
    for round in 0..ROUNDS {
        fake.push(FakeReply::tool_calls(vec![("g", "gate", "{}")]));
        let conv = app.create_conversation(None).await;
        let start = async {
            jitter(round, 0).await;
            app.post(
                &format!("/api/conversations/{conv}/runs"),
                json!({"query": "go"}),
                None,
            )
            .await
        };
        let delete = async {
            jitter(round, 1).await;
            app.delete(&format!("/api/conversations/{conv}"), None)
                .await
        };
        let (s, d) = tokio::join!(start, delete);
        let status = s.status().as_u16();
        let body: Value = s.json().await.unwrap();
        assert_eq!(d.status().as_u16(), 204, "round {round}");
        match status {
            202 => started += 1,
            404 => {
                assert_eq!(body["error"]["code"], "not_found", "round {round}");
                refused += 1;
            }
            other => panic!("round {round}: start answered {other}: {body}"),
        }
        // Whatever won, nothing keeps running on the deleted conversation.
        eventually("no run left active after the delete", || async {
            app.app.state.runs.active_runs() == 0
        })
        .await;
        app.gate.release();
    }
    eprintln!("start vs delete: {started} started then stopped, {refused} refused");
    assert_eq!(started + refused, ROUNDS);
}
