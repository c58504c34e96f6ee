//! Who reads the log: the observer sees exactly the logged events, a late subscriber gets the
//! released ones from the database.

use super::*;

/// The run manager's observer (what `/metrics` counts from) sees each event the log takes,
/// once, in log order — also for a run whose agent panicked, whose fallback `done` is the one.
#[tokio::test]
async fn the_observer_sees_exactly_the_logged_events() {
    for panicking in [false, true] {
        let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let observer: EventObserver = {
            let seen = seen.clone();
            Arc::new(move |ev: &AgentEvent| seen.lock().unwrap().push(ev.name().to_string()))
        };
        let llm = Arc::new(ScriptedLlm::native());
        let model: Arc<dyn Llm> = if panicking {
            Arc::new(PanickingLlm)
        } else {
            llm.clone()
        };
        let f = fixture_observed(llm, model, ToolRegistry::new(), Some(observer)).await;
        f.llm.tool_calls(&[("c1", "nope", "{}")]);
        f.llm.text("done");
        let (_, live) = f.new_run("alice", "hi").await;
        live.finished().await;
        let logged: Vec<String> = f
            .store
            .list_events(live.id, 0)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(*seen.lock().unwrap(), logged, "panicking: {panicking}");
        assert_eq!(logged.iter().filter(|n| *n == "done").count(), 1);
    }
}

/// Persisted events that every reader has read are dropped from memory; a subscriber that
/// comes later (a replay from the start while the run is live) gets them from the database,
/// then the rest live, with contiguous ids.
#[tokio::test]
async fn a_late_subscriber_gets_released_events_from_the_database() {
    let f = fixture(ToolRegistry::new()).await;
    f.llm.tool_calls(&[("c1", "nope", "{}")]);
    // The next loop call answers after a while: the run stays live meanwhile.
    f.llm.push(Turn::Reply(
        reagent::testing::scripted::response("brief", vec![]),
        Duration::from_millis(800),
    ));
    f.llm
        .push_stream(Turn::Stream(vec!["Hello ".into(), "world".into()], None));
    let (_, live) = f.new_run("", "q").await;
    let mut first = live.log.subscribe(0).events;
    let mut seen = Vec::new();
    while let Some(ev) = tokio::time::timeout(Duration::from_secs(5), first.next())
        .await
        .unwrap()
    {
        let tool_end = ev.data.contains("\"tool_end\"");
        seen.push(ev.id);
        if tool_end {
            break;
        }
    }
    // Poll on until nothing is ready, as an SSE body does: the reader is then done with
    // everything so far.
    while let Some(Some(ev)) = first.next().now_or_never() {
        seen.push(ev.id);
    }
    // The shared writer persists within a tick, then the log lets go of what was read.
    eventually("the log released what was persisted and read", || {
        ready(live.log.released() > 0)
    })
    .await;
    let released = live.log.released();
    assert!(released > 0, "nothing released while the run was waiting");
    assert!(
        live.log.held() < live.log.len(),
        "released events left memory"
    );

    let late: Vec<_> = tokio::time::timeout(
        Duration::from_secs(10),
        f.runs
            .events("", live.id, 0)
            .await
            .unwrap()
            .collect::<Vec<_>>(),
    )
    .await
    .unwrap();
    let ids: Vec<u64> = late.iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=late.len() as u64).collect::<Vec<_>>());
    assert_eq!(late.first().unwrap().name, "start");
    assert_eq!(late.last().unwrap().name, "done");
    assert!(late.len() as u64 > released);

    // The first reader goes on where it was, to the same end.
    let rest: Vec<u64> = first.map(|e| e.id).collect().await;
    seen.extend(rest);
    assert_eq!(seen, ids);
}
