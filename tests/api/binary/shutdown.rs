//! A run in flight when the binary stops: SIGTERM cancels it (or hands a long one over to the
//! next start) and exits cleanly; after `kill -9` the next start fails it and replays it.

use super::*;

/// Creates a conversation, starts a run (202) and returns its id once the run's `start`
/// event has been streamed, i.e. the run is really in flight.
async fn start_run(server: &Server) -> String {
    let (run, seen) = server.watch("take your time", |e| e.event == "start").await;
    assert_eq!(seen.last().map(|e| e.event.as_str()), Some("start"));
    let shown = server.get_json(&format!("/api/runs/{run}")).await;
    assert_eq!(shown["status"], "running");
    run
}

/// A model that answers long after every test has finished.
async fn slow_llm() -> FakeOpenAi {
    let llm = FakeOpenAi::start().await.unwrap();
    llm.set_default(FakeReply::text("too late").delay(60_000));
    llm
}

/// With `REAGENT_RESUME_ON_RESTART=false` (the behaviour before docs/deployment.md).
#[tokio::test]
async fn sigterm_cancels_the_active_run_and_exits_cleanly() {
    let (dir, db_url) = workdir();
    let llm = slow_llm().await;
    let off = [("REAGENT_RESUME_ON_RESTART", "false")];
    let mut server = start_with(dir.path(), &db_url, &llm, &off).await;
    let run = start_run(&server).await;

    let sent = Instant::now();
    server.signal("-TERM");
    let status = server.wait().await;
    let took = sent.elapsed();
    assert!(
        status.success(),
        "graceful shutdown should exit 0, got {status}"
    );
    assert!(
        took < Duration::from_secs(GRACE_S + 2),
        "exit took {took:?}, grace is {GRACE_S} s"
    );

    let store = Store::connect(&db_url).await.unwrap();
    let id = uuid::Uuid::parse_str(&run).unwrap();
    let row = store.get_run("", id).await.unwrap().expect("run row");
    assert_eq!(row.status, RunStatus::Cancelled);
    assert!(row.finished_at.is_some());
    let events = store.list_events(id, 0).await.unwrap();
    let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
    let expected: Vec<i64> = (1..=events.len() as i64).collect();
    assert_eq!(seqs, expected, "contiguous seq from 1");
    assert_eq!(events.first().unwrap().name, "start");
    let done = events.last().unwrap();
    assert_eq!(done.name, "done");
    let data: Value = serde_json::from_str(&done.data).unwrap();
    assert_eq!(data["status"], "cancelled");
    store.close().await;
}

/// SIGTERM (resume on, the default): the run goes on through the grace period, is then left
/// `running` with its checkpoint, and the next start resumes it to completion (docs/deployment.md).
#[tokio::test]
async fn sigterm_hands_a_long_run_over_to_the_next_start() {
    let (dir, db_url) = workdir();
    let llm = slow_llm().await;
    let mut server = start(dir.path(), &db_url, &llm).await;
    let run = start_run(&server).await;
    server.signal("-TERM");
    let status = server.wait().await;
    assert!(
        status.success(),
        "graceful shutdown should exit 0, got {status}"
    );
    let store = Store::connect(&db_url).await.unwrap();
    let id = uuid::Uuid::parse_str(&run).unwrap();
    let row = store.get_run("", id).await.unwrap().expect("run row");
    assert_eq!(row.status, RunStatus::Running, "handed over, not ended");
    assert!(store.run_checkpoint(id).await.unwrap().is_some());
    store.close().await;

    llm.set_default(FakeReply::text("in time"));
    let mut again = start(dir.path(), &db_url, &llm).await;
    let r = reqwest::Client::new()
        .get(again.url(&format!("/api/runs/{run}/events")))
        .send()
        .await
        .unwrap();
    let events = read_all(r).await;
    let labels: Vec<String> = events.iter().map(|e| e.label()).collect();
    assert_eq!(
        labels.iter().filter(|l| *l == "step:resumed").count(),
        1,
        "{labels:?}"
    );
    let done = events.last().unwrap();
    assert_eq!(done.data["status"], "completed", "{:?}", done.data);
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_ids_rise_with_one_crash_gap(&ids);
    again.signal("-TERM");
    assert!(again.wait().await.success());
    let store = Store::connect(&db_url).await.unwrap();
    assert_eq!(
        store.run_checkpoint(id).await.unwrap(),
        None,
        "a finished run keeps no checkpoint"
    );
    store.close().await;
}

#[tokio::test]
async fn kill_9_then_restart_fails_the_run_and_replays_it() {
    let (dir, db_url) = workdir();
    let llm = slow_llm().await;
    // Resuming (the default, `crash::resume`) is off: the run fails as it did before docs/deployment.md.
    let off = [("REAGENT_RESUME_ON_RESTART", "false")];
    let mut server = start_with(dir.path(), &db_url, &llm, &off).await;
    let run = start_run(&server).await;
    server.signal("-KILL");
    let status = server.wait().await;
    assert!(!status.success(), "SIGKILL cannot exit cleanly: {status}");

    let mut again = start_with(dir.path(), &db_url, &llm, &off).await;
    let client = reqwest::Client::new();
    let shown = again.get_json(&format!("/api/runs/{run}")).await;
    assert_eq!(shown["status"], "failed");
    assert_eq!(shown["error"], "interrupted by server restart");
    let r = client
        .get(again.url(&format!("/api/runs/{run}/events")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let events = read_all(r).await;
    // The recovery tail is numbered above the ids reserved before the kill.
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_ids_rise_with_one_crash_gap(&ids);
    let done = events.last().unwrap();
    assert_eq!(done.event, "done");
    assert_eq!(done.data["status"], "failed");
    assert_eq!(done.data["error"], "interrupted by server restart");

    again.signal("-TERM");
    assert!(again.wait().await.success());
}
