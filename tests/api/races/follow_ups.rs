//! Follow-ups sent while a run ends: during the answer they become the next run, after a cancel
//! they are reported unprocessed.

use super::*;

on_both_backends!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    follow_ups_during_the_answer_become_the_next_run,
    follow_ups_of_a_cancelled_run_are_reported_unprocessed,
);

/// A run that got two follow-ups while its answer streamed, and what answered them.
struct FollowedUp {
    app: TestApp,
    fake: FakeOpenAi,
    conv: String,
    run: String,
    /// The bodies of the two 202s, in the order sent.
    accepted: Vec<Value>,
}

/// Starts a run whose answer takes 1.5 s and sends it two follow-ups once the answer started;
/// each must be accepted with `next_run: true`. The answer is a synthesis call's
/// (`synthesis = "always"`): the loop has closed its queue then. (A follow-up that comes while
/// the loop's own reply streams goes to the loop, as any other: `core: engine::answer_path::`.)
async fn follow_ups_while_answering(db: &str) -> FollowedUp {
    let (app, fake) = app_with(db, Some("always")).await;
    fake.push(FakeReply::text(FINAL));
    // The answer takes a while: the window in which the follow-ups arrive.
    fake.push(FakeReply::text("first answer").delay(1500));
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "go"}), None).await;
    app.wait_for(&run, |e| e.label() == "answer:start").await;
    let mut accepted = Vec::new();
    for content in ["and also this", "and that"] {
        let r = app.interrupt(&conv, content).await;
        assert_eq!(r.status(), 202);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["next_run"], true, "{body}");
        accepted.push(body);
    }
    FollowedUp {
        app,
        fake,
        conv,
        run,
        accepted,
    }
}

/// Follow-ups sent while the answer streams (the loop has closed its queue) are accepted with
/// `next_run: true`, joined in order into the query of a run the server starts when the current
/// one ends, announced as `done.next_run_id`; nothing the user wrote is lost or stored twice.
async fn follow_ups_during_the_answer_become_the_next_run(db: String) {
    let FollowedUp {
        app,
        fake,
        conv,
        run,
        accepted,
    } = follow_ups_while_answering(&db).await;
    for body in &accepted {
        assert_eq!(body["run_id"], run.as_str());
    }
    let events = app.events(&run, None).await;
    let first = done(&events);
    assert_eq!(first["status"], "completed");
    let next = first["next_run_id"]
        .as_str()
        .expect("done names the next run")
        .to_string();
    let next_events = app.events(&next, None).await;
    assert_eq!(done(&next_events)["status"], "completed");
    let queries = messages(&app, &conv, "query").await;
    let texts: Vec<&str> = queries
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["go", "and also this\n\nand that"]);
    assert_eq!(queries[1]["run_id"], next.as_str());
    assert!(
        messages(&app, &conv, "interrupt").await.is_empty(),
        "not stored twice"
    );
    // The next run's model request has the follow-ups as its query, once.
    let joined = "and also this\n\nand that";
    let seen = fake
        .requests()
        .iter()
        .filter(|r| r.to_string().contains("and also this"))
        .count();
    assert!(seen >= 1, "the next run asked the model about {joined:?}");
    assert_eq!(app.app.state.runs.active_runs(), 0);
}

/// Follow-ups accepted with `next_run: true`, then the run is cancelled: no next run starts
/// (the user stopped it), and `done.unprocessed_interrupts` names every one of them, so no
/// accepted message goes unsaid (found by the chaos load: they were dropped).
async fn follow_ups_of_a_cancelled_run_are_reported_unprocessed(db: String) {
    // The fake model is kept to the end: dropping it would stop its server mid-run.
    let FollowedUp {
        app,
        fake: _fake,
        run,
        accepted,
        ..
    } = follow_ups_while_answering(&db).await;
    let accepted: Vec<String> = accepted
        .iter()
        .map(|body| body["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(app.cancel(&run).await.status(), 202);
    let events = app.events(&run, None).await;
    let done = done(&events);
    assert_eq!(done["status"], "cancelled", "{done}");
    assert!(done["next_run_id"].is_null(), "{done}");
    let reported: Vec<&str> = done["unprocessed_interrupts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(reported, accepted, "{done}");
}
