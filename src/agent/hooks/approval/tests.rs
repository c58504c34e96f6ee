use super::*;
use serde_json::json;
use tokio::sync::mpsc;

fn ctx(run: &str, tool: &str, events: Option<crate::agent::events::EventSink>) -> HookContext {
    HookContext {
        run_id: run.into(),
        conversation_id: format!("conv-{run}"),
        iteration: 3,
        call_id: "c1".into(),
        tool: tool.into(),
        arguments: json!({"to": "boss"}),
        tool_writes: true,
        requires_approval: true,
        events,
    }
}

/// Starts the hook on its own task and returns the approval id it announced.
async fn start(
    hook: Arc<ApprovalHook>,
    run: &str,
) -> (tokio::task::JoinHandle<Result<PreVerdict, HookError>>, Uuid) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let c = ctx(run, "send_mail", Some(tx.into()));
    let task = tokio::spawn(async move { hook.pre_tool_use(&c).await });
    let event = rx.recv().await.expect("approval_required event");
    let AgentEvent::Step(StepEvent::ApprovalRequired {
        iteration,
        approval_id,
        tool,
        arguments,
        ..
    }) = event
    else {
        panic!("unexpected event {event:?}");
    };
    assert_eq!((iteration, tool.as_str()), (3, "send_mail"));
    assert_eq!(arguments, json!({"to": "boss"}));
    (task, Uuid::parse_str(&approval_id).expect("uuid"))
}

fn hook(broker: &Arc<ApprovalBroker>, timeout: Duration) -> Arc<ApprovalHook> {
    Arc::new(ApprovalHook::new(Arc::clone(broker), timeout))
}

#[tokio::test]
async fn approve_allows_the_call_and_the_event_id_is_the_one_decide_accepts() {
    let broker = Arc::new(ApprovalBroker::new());
    let (task, id) = start(hook(&broker, Duration::from_secs(30)), "r1").await;
    let info = broker.get(id).expect("pending");
    assert_eq!(
        (info.run_id.as_str(), info.conversation_id.as_str()),
        ("r1", "conv-r1")
    );
    assert_eq!(broker.pending_count(), 1);
    broker.decide(id, true, None).unwrap();
    assert_eq!(task.await.unwrap(), Ok(PreVerdict::Allow));
    assert_eq!(broker.pending_count(), 0);
}

#[tokio::test]
async fn reject_blocks_with_the_reviewers_reason() {
    let broker = Arc::new(ApprovalBroker::new());
    let (task, id) = start(hook(&broker, Duration::from_secs(30)), "r1").await;
    broker
        .decide(id, false, Some("not on a Friday".into()))
        .unwrap();
    assert_eq!(
        task.await.unwrap(),
        Ok(PreVerdict::Block(
            "rejected by a reviewer: not on a Friday".into()
        ))
    );
}

#[tokio::test]
async fn no_decision_times_out_into_a_block_and_cleans_up() {
    let broker = Arc::new(ApprovalBroker::new());
    let (task, id) = start(hook(&broker, Duration::from_millis(100)), "r1").await;
    assert_eq!(
        task.await.unwrap(),
        Ok(PreVerdict::Block("approval timed out after 100 ms".into()))
    );
    assert_eq!(broker.pending_count(), 0);
    assert_eq!(broker.decide(id, true, None), Err(ApprovalError::NotFound));
}

#[tokio::test]
async fn concurrent_runs_wait_independently() {
    let broker = Arc::new(ApprovalBroker::new());
    let h = hook(&broker, Duration::from_secs(30));
    let (task_a, id_a) = start(Arc::clone(&h), "a").await;
    let (task_b, id_b) = start(Arc::clone(&h), "b").await;
    assert_ne!(id_a, id_b);
    assert_eq!(broker.pending_count(), 2);
    broker.decide(id_b, false, None).unwrap();
    assert_eq!(
        task_b.await.unwrap(),
        Ok(PreVerdict::Block("rejected by a reviewer".into()))
    );
    // A is still waiting, untouched by B's decision.
    assert!(!task_a.is_finished());
    assert_eq!(broker.get(id_a).map(|i| i.run_id), Some("a".into()));
    broker.decide(id_a, true, None).unwrap();
    assert_eq!(task_a.await.unwrap(), Ok(PreVerdict::Allow));
}

#[tokio::test]
async fn dropping_the_waiting_future_withdraws_the_request() {
    let broker = Arc::new(ApprovalBroker::new());
    let (task, id) = start(hook(&broker, Duration::from_secs(30)), "r1").await;
    assert_eq!(broker.pending_count(), 1);
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert_eq!(broker.pending_count(), 0);
    assert_eq!(broker.get(id), None);
    assert_eq!(broker.decide(id, true, None), Err(ApprovalError::NotFound));
}

#[tokio::test]
async fn deciding_twice_or_an_unknown_id_is_not_found() {
    let broker = Arc::new(ApprovalBroker::new());
    let (task, id) = start(hook(&broker, Duration::from_secs(30)), "r1").await;
    assert_eq!(
        broker.decide(Uuid::new_v4(), true, None),
        Err(ApprovalError::NotFound)
    );
    broker.decide(id, true, None).unwrap();
    assert_eq!(broker.decide(id, false, None), Err(ApprovalError::NotFound));
    assert_eq!(task.await.unwrap(), Ok(PreVerdict::Allow));
}

#[tokio::test]
async fn tools_without_requires_approval_pass_straight_through() {
    let broker = Arc::new(ApprovalBroker::new());
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut c = ctx("r1", "calculator", Some(tx.into()));
    c.requires_approval = false;
    let verdict = hook(&broker, Duration::from_secs(30))
        .pre_tool_use(&c)
        .await;
    assert_eq!(verdict, Ok(PreVerdict::Allow));
    assert_eq!(broker.pending_count(), 0);
    assert!(rx.try_recv().is_err());
}
