//! kill -9 while the answer streams (issue 17, item 3). Events are streamed before they are
//! stored, so a client may have seen ids the database never got. A client records every event
//! it saw; after the restart's recovery the replay must never give one of those ids other
//! content: each seen event is in the replay under its id with the same data, or is followed
//! by an `answer` `reset` with a higher id. A client resuming with `Last-Event-ID` at the last
//! id it saw gets that `reset` (it would otherwise keep a half-written answer). Both with the
//! run failed by recovery (`REAGENT_RESUME_ON_RESTART=false`) and resumed from its checkpoint.

use std::time::Duration;

use reagent_mock::{MockConfig, MockProvider};

use super::{kill_and_restart, resume_env, start_with};
use crate::support::child::Server;
use crate::support::sse::{assert_ids_rise_with_one_crash_gap, assert_seen_replayed, Sse};

/// Kills per backend, each after a different number of streamed deltas.
const KILLS: [usize; 3] = [5, 40, 150];

on_both_backends!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    kill_9_during_synthesis_never_gives_a_seen_id_other_content,
    kill_9_during_synthesis_resumes_with_a_reset
);

/// `REAGENT_RESUME_ON_RESTART=false`: the run ends `failed` with the recovery tail.
async fn kill_9_during_synthesis_never_gives_a_seen_id_other_content(db_url: String) {
    kill_during_synthesis(&db_url, false).await;
}

/// The default: the run resumes from its checkpoint, `reset` first, and completes.
async fn kill_9_during_synthesis_resumes_with_a_reset(db_url: String) {
    kill_during_synthesis(&db_url, true).await;
}

async fn kill_during_synthesis(db_url: &str, resume: bool) {
    let dir = tempfile::tempdir().unwrap();
    // One tool iteration, then an answer longer than the test reads of it before the kill.
    let mock = MockProvider::start(MockConfig {
        latency: Duration::from_millis(20),
        tokens_per_s: 300.0,
        answer_tokens: 400,
        tool_iterations: 1,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let llm = mock.base_url();
    let env = resume_env(resume);
    let mut server = start_with(dir.path(), db_url, &llm, &env).await;
    for deltas in KILLS {
        let (run, seen) = watch_until_deltas(&server, deltas).await;
        kill_and_restart(&mut server, dir.path(), db_url, &llm, &env).await;
        let replay = events(&server, &run, None).await;
        compare(&run, &seen, &replay);
        let resumed = replay
            .iter()
            .filter(|e| e.label() == "step:resumed")
            .count();
        let (status, count) = if resume {
            ("completed", 1)
        } else {
            ("failed", 0)
        };
        assert_eq!(resumed, count, "run {run}: resumed steps");
        assert_eq!(replay.last().unwrap().data["status"], status, "run {run}");
        let last_seen = seen.last().map(|e| e.id).unwrap_or(0);
        let resumed = events(&server, &run, Some(last_seen)).await;
        assert!(
            resumed.iter().all(|e| e.id > last_seen),
            "run {run}: a resume from {last_seen} got older ids"
        );
        assert!(
            resumed.iter().any(|e| e.label() == "answer:reset"),
            "run {run}: the client resuming from {last_seen} must learn its answer was reset: {:?}",
            resumed
                .iter()
                .map(|e| (e.id, e.label()))
                .collect::<Vec<_>>()
        );
        assert_eq!(resumed.last().map(|e| e.event.as_str()), Some("done"));
        eprintln!(
            "killed after {deltas} deltas: {} events seen, replay {} events up to id {}",
            seen.len(),
            replay.len(),
            replay.last().map(|e| e.id).unwrap_or(0)
        );
    }
    server.kill9().await;
    mock.shutdown().await;
}

/// Starts a run and follows its events until `deltas` answer deltas arrived; what was seen.
async fn watch_until_deltas(server: &Server, deltas: usize) -> (String, Vec<Sse>) {
    let mut n = 0;
    let (run, seen) = watch(server, |e| {
        n += usize::from(e.label() == "answer:delta");
        n >= deltas
    })
    .await;
    assert!(n >= deltas, "the stream ended before {deltas} deltas");
    (run, seen)
}

/// Starts a run in a new conversation and follows its events until `stop`; what was seen.
pub(super) async fn watch(server: &Server, stop: impl FnMut(&Sse) -> bool) -> (String, Vec<Sse>) {
    server.watch("stream a long answer", stop).await
}

/// The run's events (after `after`, as `Last-Event-ID`) from the restarted server, to the end.
pub(super) async fn events(server: &Server, run: &str, after: Option<u64>) -> Vec<Sse> {
    // On PostgreSQL a restarted process takes the run once the killed one's lease lapses; until
    // then its stream replays what is stored and ends: the client resumes with `Last-Event-ID`
    // like any client, until `done`.
    server.events_until_done(run, after).await
}

/// No id with two contents: every seen event is replayed as seen, or a `reset` above it.
pub(super) fn compare(run: &str, seen: &[Sse], replay: &[Sse]) {
    let ids: Vec<u64> = replay.iter().map(|e| e.id).collect();
    assert_ids_rise_with_one_crash_gap(&ids);
    assert_seen_replayed(run, seen, replay);
}
