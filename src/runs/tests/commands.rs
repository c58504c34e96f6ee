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
    assert_eq!(f.runs.approvals_of("alice").await.unwrap().len(), 1);
    assert!(f.runs.approvals_of("bob").await.unwrap().is_empty());
    let foreign = f.runs.decide_approval("bob", id, true, None).await;
    assert!(matches!(foreign, Err(RunError::NotFound)), "{foreign:?}");
    let nul = f
        .runs
        .decide_approval("alice", id, false, Some("a\0b".into()))
        .await;
    assert!(matches!(nul, Err(RunError::Invalid(_))), "{nul:?}");
    f.runs
        .decide_approval("alice", id, true, None)
        .await
        .unwrap();
    assert!(
        f.runs.approvals_of("alice").await.unwrap().is_empty(),
        "decided once"
    );
    let again = f.runs.decide_approval("alice", id, true, None).await;
    assert!(matches!(again, Err(RunError::NotFound)), "{again:?}");
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

#[tokio::test]
async fn a_takeover_applies_the_pending_commands_once() {
    use crate::store::CommandKind;
    let f = fixture().await;
    let live = f.slow_run("alice", Duration::from_secs(30)).await;
    let conv = live.conversation_id;
    let queued = f.runs.interrupt("alice", conv, "hi".into()).await.unwrap();
    let recall = f
        .store
        .send_command(live.id, CommandKind::Recall, Some(queued.id));
    let recall = recall.await.unwrap().unwrap();
    let unknown = f
        .store
        .send_command(live.id, CommandKind::Recall, Some(Uuid::new_v4()));
    let unknown = unknown.await.unwrap().unwrap();
    let cancel = f.store.send_command(live.id, CommandKind::Cancel, None);
    cancel.await.unwrap().unwrap();
    assert_eq!(
        f.store.pending_commands(Some(live.id)).await.unwrap().len(),
        3
    );
    assert_eq!(f.store.pending_commands(None).await.unwrap().len(), 3);
    // The previous owner's request: its hook is gone.
    let stale = Uuid::new_v4();
    f.store.insert_approval(stale, live.id, "{}").await.unwrap();
    assert_eq!(
        f.store.undecided_approvals(live.id).await.unwrap(),
        vec![stale]
    );

    f.runs.apply_pending_commands(live.id).await.unwrap();
    assert!(f
        .store
        .undecided_approvals(live.id)
        .await
        .unwrap()
        .is_empty());
    let (_, outcome) = finished(&live).await;
    assert_eq!(outcome.status, RunStatus::Cancelled);
    assert!(outcome.unprocessed_interrupts.is_empty(), "recalled first");
    let answer = |seq| f.store.command_result(seq);
    assert_eq!(answer(recall).await.unwrap(), Some(Some("recalled".into())));
    assert_eq!(
        answer(unknown).await.unwrap(),
        Some(Some("not_found".into()))
    );
    assert!(f.store.pending_commands(None).await.unwrap().is_empty());
    // Done once: a second claim fails, and a finished run takes no command.
    assert!(!f.store.claim_command(recall, None).await.unwrap());
    let late = f.store.send_command(live.id, CommandKind::Cancel, None);
    assert_eq!(late.await.unwrap(), None);
}
