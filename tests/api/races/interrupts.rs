//! Interrupts racing the run: interrupt vs loop end, recall vs drain, and the deterministic edge
//! of the first (an interrupt during the last iteration is reported unprocessed).

use super::*;

on_both_backends!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    interrupt_vs_loop_end,
    recall_vs_drain,
);

/// An interrupt's answer: `(status, body, content sent)`.
type Outcome = (u16, Value, String);

/// What became of one round's interrupts, summed over the rounds.
#[derive(Default)]
struct Tally {
    accepted: usize,
    refused: usize,
    unprocessed: usize,
}

async fn interrupt_vs_loop_end(db: String) {
    let (app, fake) = app(&db).await;
    let mut tally = Tally::default();
    for round in 0..ROUNDS {
        interrupt_round(&app, &fake, round, &mut tally).await;
    }
    eprintln!(
        "interrupt vs loop end: {} accepted ({} unprocessed), {} refused",
        tally.accepted, tally.unprocessed, tally.refused
    );
    assert_eq!(app.app.state.runs.active_runs(), 0);
}

/// One run waiting in the gate, interrupts racing its end; every interrupt accounted for.
async fn interrupt_round(app: &TestApp, fake: &FakeOpenAi, round: usize, tally: &mut Tally) {
    let (conv, run) = start_gated_run(app, fake, round).await;
    let outcomes = race_interrupts(app, &conv, round).await;
    let events = app.events(&run, None).await;
    let (next_id, next_query) = next_runs(app, &conv, &events).await;
    // And one certainly after the end (of every next run too): refused, not stored.
    let late = app.interrupt(&conv, "<late>").await;
    assert_eq!(late.status(), 409, "the run is over: it must refuse");
    let (seen, unprocessed) = interrupt_fates(&events);
    let mut stored = messages(app, &conv, "interrupt").await;
    stored.retain(|m| m["run_id"] == run.as_str());
    let fates = Fates {
        round,
        run: &run,
        next_id: next_id.as_deref(),
        next_query: &next_query,
        seen: &seen,
        unprocessed: &unprocessed,
        stored_ids: stored.iter().map(|m| m["id"].as_str().unwrap()).collect(),
        fake,
    };
    let (mut accepted, mut to_next) = (0, 0);
    for outcome in &outcomes {
        match fates.check(outcome) {
            Fate::NextRun => {}
            Fate::Seen => accepted += 1,
            Fate::ToNext => (accepted, to_next) = (accepted + 1, to_next + 1),
            Fate::Refused => tally.refused += 1,
        }
    }
    assert_eq!(
        stored.len(),
        accepted - to_next,
        "round {round}: refused interrupts are not kept, the next run's are its query"
    );
    assert_eq!(seen.len() + to_next, accepted);
    tally.accepted += accepted;
    tally.unprocessed += unprocessed.len();
    let status = done(&events)["status"].as_str().unwrap().to_string();
    assert!(
        status == "completed" || status == "max_iterations",
        "{status}"
    );
}

/// Starts a run that waits in the gate tool, alternating native and JSON mode and a spare
/// iteration or none; `(conversation, run)` once it is in the tool.
async fn start_gated_run(app: &TestApp, fake: &FakeOpenAi, round: usize) -> (String, String) {
    // The run waits in the gate tool; the gate opens while the interrupts are sent, so they
    // land before the drain, between the drain and the end, or after the queue closed.
    // Rounds alternate native and JSON mode (they drain at different points).
    let mode = if round % 4 < 2 { "native" } else { "json" };
    if mode == "native" {
        fake.push(FakeReply::tool_calls(vec![("g", "gate", "{}")]));
    } else {
        fake.push(FakeReply::text(
            r#"{"type":"tool_call","reasoning":"","tool_name":"gate","tool_args":{}}"#,
        ));
    }
    let conv = app.create_conversation(None).await;
    // Every other round has no iteration to spare after the gate, so interrupts that arrive
    // with the final answer cannot be processed and must be reported.
    let max_iterations = if round.is_multiple_of(2) { 2 } else { 20 };
    let body = json!({"query": "go", "max_iterations": max_iterations, "mode": mode});
    let run = app.start_run(&conv, body, None).await;
    app.wait_for(&run, |e| e.label() == "step:tool_start").await;
    (conv, run)
}

/// One interrupt while the run is certainly in its tool, then four racing the gate's release.
async fn race_interrupts(app: &TestApp, conv: &str, round: usize) -> Vec<Outcome> {
    // One interrupt certainly while the run works (it is in the gate), racing ones below.
    let early = app.interrupt(conv, &format!("<early {round}>")).await;
    assert_eq!(
        early.status(),
        202,
        "the run is in its tool: it must accept"
    );
    let early: Value = early.json().await.unwrap();
    let early = (202, early, format!("<early {round}>"));
    let release = async {
        jitter(round, 0).await;
        app.gate.release();
    };
    let sends = (0..4).map(|i| async move {
        jitter(round, i + 1).await;
        let content = format!("<note {round}-{i}>");
        let r = app.interrupt(conv, &content).await;
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap();
        (status, body, content)
    });
    let (_, mut outcomes) = tokio::join!(release, futures::future::join_all(sends));
    outcomes.push(early);
    outcomes
}

/// The next run the server started, if any, and its query; waits for every next run's end.
async fn next_runs(app: &TestApp, conv: &str, events: &[Sse]) -> (Option<String>, String) {
    // What this run could not take (unprocessed, or sent after its loop closed) is the
    // query of the next run the server started (docs/api.md).
    let next_id = done(events)["next_run_id"].as_str().map(str::to_string);
    let next_query = match next_id.as_deref() {
        Some(next) => {
            let next_events = app.events(next, None).await;
            assert_eq!(done(&next_events)["status"], "completed");
            let queries = messages(app, conv, "query").await;
            let q = queries
                .iter()
                .find(|m| m["run_id"] == next)
                .expect("its query");
            q["content"].as_str().unwrap().to_string()
        }
        None => String::new(),
    };
    // A note the next run took as a follow-up starts one more run: wait for the chain's end.
    let mut last = next_id.clone();
    while let Some(r) = last {
        last = done(&app.events(&r, None).await)["next_run_id"]
            .as_str()
            .map(str::to_string);
    }
    (next_id, next_query)
}

/// Where an interrupt went.
enum Fate {
    /// Accepted by a next run, after it had started.
    NextRun,
    /// Accepted and drained by this run.
    Seen,
    /// Accepted, then carried to the next run's query.
    ToNext,
    /// Refused: no active run.
    Refused,
}

/// What one round's interrupts are checked against.
struct Fates<'a> {
    round: usize,
    run: &'a str,
    next_id: Option<&'a str>,
    next_query: &'a str,
    seen: &'a [String],
    unprocessed: &'a [String],
    stored_ids: HashSet<&'a str>,
    fake: &'a FakeOpenAi,
}

impl Fates<'_> {
    /// Checks that the interrupt went exactly one way, and that it was not lost on it.
    fn check(&self, (status, body, content): &Outcome) -> Fate {
        let (round, fake) = (self.round, self.fake);
        if *status == 202 && body["run_id"] != self.run {
            // Sent after the next run had started: that run's interrupt, never lost either.
            assert_eq!(body["run_id"].as_str(), self.next_id, "round {round}");
            assert!(model_saw(fake, content), "round {round}: {content} lost");
            return Fate::NextRun;
        }
        match status {
            202 => self.check_accepted(body, content),
            409 => {
                assert_eq!(body["error"]["code"], "no_active_run");
                Fate::Refused
            }
            other => panic!("round {round}: interrupt answered {other}: {body}"),
        }
    }

    /// An accepted interrupt is seen, unprocessed or late exactly once, and reaches the model.
    fn check_accepted(&self, body: &Value, content: &str) -> Fate {
        let (round, fake, next_query) = (self.round, self.fake, self.next_query);
        let id = body["id"].as_str().unwrap();
        let n_seen = self.seen.iter().filter(|s| *s == id).count();
        let n_unprocessed = self.unprocessed.iter().filter(|s| *s == id).count();
        let late = usize::from(body["next_run"] == true);
        assert_eq!(
            n_seen + n_unprocessed + late,
            1,
            "round {round}: interrupt {id} seen {n_seen}×, unprocessed {n_unprocessed}×, late {late}×"
        );
        if n_seen == 1 {
            assert!(
                model_saw(fake, content),
                "drained but the model never saw it"
            );
            assert!(
                self.stored_ids.contains(id),
                "round {round}: accepted but not persisted"
            );
            return Fate::Seen;
        }
        assert!(
            next_query.contains(content),
            "round {round}: {content} is not in the next run's query {next_query:?}"
        );
        assert!(
            model_saw(fake, content),
            "the next run never asked about it"
        );
        Fate::ToNext
    }
}

async fn recall_vs_drain(db: String) {
    let (app, fake) = app(&db).await;
    let (mut recalled, mut drained) = (0, 0);
    for round in 0..ROUNDS {
        fake.push(FakeReply::tool_calls(vec![("g", "gate", "{}")]));
        let conv = app.create_conversation(None).await;
        let run = app.start_run(&conv, json!({"query": "go"}), None).await;
        app.wait_for(&run, |e| e.label() == "step:tool_start").await;
        let content = format!("<recall me {round}>");
        let r = app.interrupt(&conv, &content).await;
        assert_eq!(r.status(), 202);
        let id = r.json::<Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        // The gate opens (the tool ends, the loop drains) while the recall is on its way.
        let recall = async {
            app.delete(&format!("/api/conversations/{conv}/interrupt/{id}"), None)
                .await
        };
        let release = async {
            // Some rounds open the gate before the recall is even sent (tokio timers have a
            // 1 ms grain, so "no delay" must not go through a timer).
            let ms = (round % 4) as u64;
            if ms > 0 {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            app.gate.release();
        };
        let (_, r) = tokio::join!(release, recall);
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap();
        let events = read_all(app.events_response(&run, None).await).await;
        let (seen, unprocessed) = interrupt_fates(&events);
        let stored = messages(&app, &conv, "interrupt").await;
        match status {
            200 => {
                assert_eq!(body, json!({"recalled": true}));
                assert!(
                    !seen.contains(&id) && !unprocessed.contains(&id),
                    "round {round}"
                );
                assert!(!model_saw(&fake, &content), "recalled but the model saw it");
                assert!(stored.is_empty(), "a recalled interrupt is not kept");
                recalled += 1;
            }
            409 => {
                assert_eq!(seen, vec![id.clone()], "round {round}: 409 but not drained");
                assert!(model_saw(&fake, &content));
                assert_eq!(stored.len(), 1);
                drained += 1;
            }
            other => panic!("round {round}: recall answered {other}: {body}"),
        }
        assert_eq!(done(&events)["status"], "completed");
    }
    eprintln!("recall vs drain: {recalled} recalled, {drained} drained");
    assert!(recalled + drained == ROUNDS);
    assert_eq!(app.app.state.runs.active_runs(), 0);
}

/// The deterministic edge of `interrupt_vs_loop_end` (a bug it found): an interrupt that arrives
/// during the last iteration's tool call can no longer reach the model, so it is reported in
/// `done.unprocessed_interrupts` — not emitted as `step interrupt` and silently dropped.
#[tokio::test]
async fn an_interrupt_during_the_last_iteration_is_reported_unprocessed() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("r.db").display());
    let (app, fake) = app(&db).await;
    fake.push(FakeReply::tool_calls(vec![("g", "gate", "{}")]));
    let conv = app.create_conversation(None).await;
    let body = json!({"query": "go", "max_iterations": 1});
    let run = app.start_run(&conv, body, None).await;
    app.wait_for(&run, |e| e.label() == "step:tool_start").await;
    let r = app.interrupt(&conv, "<too late>").await;
    assert_eq!(r.status(), 202);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.gate.release();
    let events = app.events(&run, None).await;
    let (seen, unprocessed) = interrupt_fates(&events);
    assert!(seen.is_empty(), "{seen:?}");
    assert_eq!(unprocessed, vec![id]);
    assert_eq!(done(&events)["status"], "max_iterations");
    // Never lost: it is the query of the run the server started next (docs/api.md).
    let next = done(&events)["next_run_id"]
        .as_str()
        .expect("a next run")
        .to_string();
    let next_events = app.events(&next, None).await;
    assert_eq!(done(&next_events)["status"], "completed");
    let queries = messages(&app, &conv, "query").await;
    assert_eq!(queries.len(), 2);
    assert_eq!(queries[1]["content"], "<too late>");
    assert_eq!(queries[1]["run_id"], next.as_str());
    assert!(messages(&app, &conv, "interrupt").await.is_empty());
}
