//! Commands checked against the live run's owner: cancel, interrupts, approvals; the stored final state; delete.

use super::*;

#[tokio::test]
async fn cancel_is_for_the_owner_and_ends_the_run_cancelled() {
    let f = fixture().await;
    let live = f.slow_run("alice", Duration::from_secs(30)).await;
    let other = f.runs.cancel("bob", live.id).await;
    assert!(matches!(other, Err(RunError::NotFound)), "{other:?}");
    f.runs.cancel("alice", live.id).await.unwrap();
    let (_, outcome) = finished(&live).await;
    assert_eq!(outcome.status, RunStatus::Cancelled);
    let row = f.store.get_run("alice", live.id).await.unwrap().unwrap();
    assert_eq!(row.status, RunStatus::Cancelled);
    // Gone from the live state: answered from the database.
    assert!(f.runs.live_run("alice", live.id).is_none());
    let late = f.runs.cancel("alice", live.id).await;
    assert!(matches!(late, Err(RunError::Finished)), "{late:?}");
}

#[tokio::test]
async fn interrupts_are_checked_and_a_pending_one_can_be_recalled() {
    let f = fixture().await;
    let live = f.slow_run("alice", Duration::from_millis(400)).await;
    let conv = live.conversation_id;
    let empty = f.runs.interrupt("alice", conv, "  ".into()).await;
    assert!(matches!(empty, Err(RunError::Invalid(_))), "{empty:?}");
    let foreign = f.runs.interrupt("bob", conv, "hi".into()).await;
    assert!(matches!(foreign, Err(RunError::NotFound)), "{foreign:?}");
    let accepted = f.runs.interrupt("alice", conv, "hi".into()).await.unwrap();
    let (iid, run_id) = (accepted.id, accepted.run_id);
    assert!(!accepted.next_run);
    assert_eq!(run_id, live.id);
    let stored = |kind: MessageKind| {
        let store = f.store.clone();
        async move {
            store
                .list_messages(conv)
                .await
                .unwrap()
                .iter()
                .any(|m| m.kind == kind)
        }
    };
    assert!(
        stored(MessageKind::Interrupt).await,
        "persisted before accepted"
    );
    let foreign = f.runs.recall("bob", conv, iid).await;
    assert!(matches!(foreign, Err(RunError::NotFound)), "{foreign:?}");
    f.runs.recall("alice", conv, iid).await.unwrap();
    assert!(
        !stored(MessageKind::Interrupt).await,
        "a recalled interrupt is not kept"
    );
    // Recalled, so never accepted: unknown now.
    let twice = f.runs.recall("alice", conv, iid).await;
    assert!(matches!(twice, Err(RunError::NotFound)), "{twice:?}");
    let (_, outcome) = finished(&live).await;
    assert!(outcome.unprocessed_interrupts.is_empty());
    let after = f.runs.interrupt("alice", conv, "late".into()).await;
    assert!(matches!(after, Err(RunError::NoActiveRun)), "{after:?}");
}

#[tokio::test]
async fn approvals_are_visible_and_decidable_by_their_runs_owner_only() {
    let f = fixture().await;
    let live = f.slow_run("alice", Duration::from_millis(300)).await;
    let pending = f.runs.approvals.request(ApprovalInfo {
        run_id: live.id.to_string(),
        conversation_id: live.conversation_id.to_string(),
        tool: "t".into(),
        arguments: json!({}),
        requested_at: chrono::Utc::now(),
    });
    let id = pending.id();
    assert_eq!(f.runs.approvals_of("alice").len(), 1);
    assert!(f.runs.approvals_of("bob").is_empty());
    let foreign = f.runs.decide_approval("bob", id, true, None);
    assert!(matches!(foreign, Err(RunError::NotFound)), "{foreign:?}");
    let nul = f
        .runs
        .decide_approval("alice", id, false, Some("a\0b".into()));
    assert!(matches!(nul, Err(RunError::Invalid(_))), "{nul:?}");
    let info = f.runs.decide_approval("alice", id, true, None).unwrap();
    assert_eq!(info.run_id, live.id.to_string());
    assert!(f.runs.approvals_of("alice").is_empty(), "decided once");
    finished(&live).await;
}

#[tokio::test]
async fn the_stored_final_state_is_the_outcome_done_carried() {
    let f = fixture().await;
    f.llm.text("brief");
    let id = f.conversation("").await;
    let live = f.start_in("", id, "q").await.unwrap();
    let (_, outcome) = finished(&live).await;
    let row = f.store.get_run("", live.id).await.unwrap().unwrap();
    assert_eq!(
        (
            row.status,
            row.iterations,
            row.tool_calls,
            row.usage,
            row.error
        ),
        (
            outcome.status,
            outcome.iterations,
            outcome.tool_calls,
            outcome.usage,
            outcome.error.clone()
        )
    );
    let answers: Vec<String> = f
        .store
        .list_messages(id)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.kind == MessageKind::Answer)
        .map(|m| m.content)
        .collect();
    assert_eq!(answers, std::slice::from_ref(&outcome.answer));
    // Without a place for the answer (recovery) only the run's state is kept.
    assert!(final_state(&outcome, None).answer.is_none());
    let empty = RunOutcome {
        answer: String::new(),
        ..outcome
    };
    assert!(final_state(&empty, Some((id, live.id))).answer.is_none());
}

#[tokio::test]
async fn deleting_a_conversation_stops_its_run_first() {
    let f = fixture().await;
    let live = f.slow_run("alice", Duration::from_secs(30)).await;
    let conv = live.conversation_id;
    let foreign = f.runs.delete_conversation("bob", conv).await;
    assert!(matches!(foreign, Err(RunError::NotFound)), "{foreign:?}");
    f.runs.delete_conversation("alice", conv).await.unwrap();
    assert!(live.cancel.is_cancelled() && live.log.is_closed());
    assert_eq!(f.runs.active_runs(), 0);
    assert!(f
        .store
        .get_conversation("alice", conv)
        .await
        .unwrap()
        .is_none());
}
