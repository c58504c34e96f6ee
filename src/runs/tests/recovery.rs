//! Runs that cannot end themselves: the panic tail, and recovery after a restart.

use super::*;

#[tokio::test]
async fn a_panicking_engine_ends_with_the_fallback_tail() {
    let f = fixture_with(Arc::new(ScriptedLlm::native()), Arc::new(Broken::Panicking)).await;
    let id = f.conversation("").await;
    let live = f.start_in("", id, "q").await.unwrap();
    let (names, outcome) = finished(&live).await;
    assert_eq!(names, ["start", "answer", "answer", "answer", "done"]);
    assert_eq!(outcome.status, RunStatus::Failed);
    assert_eq!(outcome.error.as_deref(), Some("internal error"));
    let row = f.store.get_run("", live.id).await.unwrap().unwrap();
    assert_eq!(row.status, RunStatus::Failed);
    assert_eq!(f.runs.active_runs(), 0, "the conversation is free again");
}

impl Fixture {
    /// A run a previous process left `running` in a new conversation, with these events.
    async fn left_running(&self, events: &[(&str, &str)]) -> (Uuid, Uuid) {
        let conv = self.conversation("").await;
        let run_id = Uuid::new_v4();
        let run = NewRun {
            id: run_id,
            conversation_id: conv,
            owner: "".into(),
            mode: Mode::Json,
            model: "default".into(),
            traceparent: None,
        };
        self.store.create_run(run).await.unwrap();
        let events: Vec<StoredEvent> = (1..)
            .zip(events)
            .map(|(seq, (name, data))| StoredEvent {
                seq,
                name: name.to_string(),
                data: data.to_string(),
            })
            .collect();
        self.store.append_events(run_id, &events).await.unwrap();
        (conv, run_id)
    }

    /// The answer statuses and the `done` error of a run's stored log.
    async fn stored_tail(&self, run_id: Uuid) -> (Vec<String>, Option<String>) {
        let mut statuses = Vec::new();
        let mut error = None;
        for e in self.store.list_events(run_id, 0).await.unwrap() {
            match AgentEvent::from_parts(&e.name, &e.data) {
                Ok(AgentEvent::Answer(a)) => {
                    let v = serde_json::to_value(a).unwrap();
                    statuses.push(v["status"].as_str().unwrap_or_default().to_string());
                }
                Ok(AgentEvent::Done(d)) => error = d.error,
                _ => statuses.push(e.name),
            }
        }
        (statuses, error)
    }
}

#[tokio::test]
async fn recovery_fails_running_rows_with_the_fallback_tail() {
    let f = fixture().await;
    let (conv, before_answer) = f.left_running(&[("start", "{}")]).await;
    let (_, mid_answer) = f
        .left_running(&[("start", "{}"), ("answer", r#"{"status":"start"}"#)])
        .await;
    assert_eq!(f.runs.recover().await.unwrap().total(), 2);
    for run_id in [before_answer, mid_answer] {
        let row = f.store.get_run("", run_id).await.unwrap().unwrap();
        assert_eq!(row.status, RunStatus::Failed);
        assert_eq!(row.error.as_deref(), Some(RESTART_ERROR));
    }
    // Ids beyond the stored log may have been streamed (an answer among them): the fallback
    // answer resets whatever the client may have.
    let tail = (
        ["start", "start", "reset", "delta", "done"]
            .map(String::from)
            .to_vec(),
        Some(RESTART_ERROR.to_string()),
    );
    assert_eq!(f.stored_tail(before_answer).await, tail);
    assert_eq!(f.stored_tail(mid_answer).await, tail);
    assert!(
        f.store.list_messages(conv).await.unwrap().is_empty(),
        "the apology is not history"
    );
    assert_eq!(f.runs.recover().await.unwrap().total(), 0, "idempotent");
}

#[tokio::test]
async fn a_recovered_run_keeps_the_counters_its_events_show() {
    let f = fixture().await;
    let tool_start = |i: u32, id: &str| {
        format!(
            r#"{{"type":"tool_start","iteration":{i},"call_id":"{id}","tool":"t","arguments":{{}}}}"#
        )
    };
    let (first, second) = (tool_start(1, "a"), tool_start(2, "b"));
    let (_, run_id) = f
        .left_running(&[
            ("start", "{}"),
            (
                "step",
                r#"{"type":"thinking","iteration":1,"reasoning":""}"#,
            ),
            ("step", &first),
            (
                "step",
                r#"{"type":"thinking","iteration":2,"reasoning":""}"#,
            ),
            ("step", &second),
        ])
        .await;
    f.runs.recover().await.unwrap();
    let row = f.store.get_run("", run_id).await.unwrap().unwrap();
    assert_eq!((row.iterations, row.tool_calls), (2, 2));
    let done = f.store.list_events(run_id, 0).await.unwrap();
    let done = done.last().unwrap();
    let Ok(AgentEvent::Done(outcome)) = AgentEvent::from_parts(&done.name, &done.data) else {
        panic!("the log ends with done: {done:?}");
    };
    assert_eq!((outcome.iterations, outcome.tool_calls), (2, 2));
}

#[tokio::test]
async fn a_recovered_dag_run_ends_with_a_dag_done() {
    let f = fixture().await;
    let plan = r#"{"type":"plan","round":1,"steps":[]}"#;
    let (_, run_id) = f
        .left_running(&[
            (
                "start",
                r#"{"run_id":"r","conversation_id":"c","model":"m","mode":"native","engine":"dag"}"#,
            ),
            ("step", plan),
            ("step", r#"{"type":"replan","round":2,"reason":"x"}"#),
            ("step", &plan.replace("1", "2")),
        ])
        .await;
    f.runs.recover().await.unwrap();
    let events = f.store.list_events(run_id, 0).await.unwrap();
    let done = events.last().unwrap();
    let Ok(AgentEvent::Done(outcome)) = AgentEvent::from_parts(&done.name, &done.data) else {
        panic!("the log ends with done: {done:?}");
    };
    let dag = outcome.dag.expect("a DAG done");
    assert_eq!((dag.rounds, dag.achieved), (2, false));
}
