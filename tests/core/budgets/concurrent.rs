//! The phases of `concurrent_runs_never_spend_past_the_limit`: twenty runs racing for the
//! budget, what they spent, and admission refusing until the window rolls over.

use super::*;

/// Twenty runs of alice through the two instances at once; the statuses of those that started.
pub(super) async fn twenty_runs_at_once(instances: &[Arc<RunManager>; 2]) -> Vec<RunStatus> {
    let mut tasks = Vec::new();
    for i in 0..20 {
        let runs = instances[i % 2].clone();
        tasks.push(tokio::spawn(async move { run(&runs, "alice").await }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            Ok(outcome) => {
                assert!(!outcome.answer.trim().is_empty(), "{outcome:?}");
                assert!(
                    matches!(
                        outcome.status,
                        RunStatus::Completed | RunStatus::BudgetExceeded
                    ),
                    "{outcome:?}"
                );
                if outcome.status == RunStatus::Completed {
                    assert!(outcome.usage.cost_usd.nanos() > 0, "{outcome:?}");
                }
                statuses.push(outcome.status);
            }
            // Admission saw the budget used up: refused before it started.
            Err(RunError::BudgetExceeded { retry_after, .. }) => {
                assert!((1..=86_400).contains(&retry_after));
            }
            Err(e) => panic!("unexpected start error: {e}"),
        }
    }
    statuses
}

/// Alice's spend today is within `limit`, not nothing, and holds no reservation; the tokens.
pub(super) async fn spent_within_the_limit(store: &Store, limit: u64, now: DateTime<Utc>) -> i64 {
    // Whether any run completes depends on how the twenty interleave (on a loaded machine
    // every run can meet the others' reservations); that some calls were made does not.
    let spend = store
        .budget_spend("alice", &[("day", day_start(now))])
        .await
        .unwrap();
    let s = &spend[0];
    assert!(s.spent_tokens <= limit as i64, "overshoot: {s:?}");
    assert!(s.spent_tokens > 0, "{s:?}");
    assert_eq!(
        (s.reserved_tokens, s.reserved_nanos),
        (0, 0),
        "a reservation leaked: {s:?}"
    );
    s.spent_tokens
}

/// Reserves and settles the `rest` of alice's day, so that admission refuses.
pub(super) async fn spend_the_rest(store: &Store, limit: u64, now: DateTime<Utc>, rest: i64) {
    store
        .settle_budget(
            store
                .reserve_budget(
                    "alice",
                    Uuid::new_v4(),
                    &[WindowLimit {
                        kind: "day",
                        starts_at: day_start(now),
                        tokens: Some(limit as i64),
                        nanos: None,
                    }],
                    rest,
                    0,
                )
                .await
                .unwrap()
                .as_ref(),
            &CallUsage {
                tenant: "alice".into(),
                prompt_tokens: rest,
                ..CallUsage::default()
            },
        )
        .await
        .unwrap();
}

/// Alice is refused until midnight, and runs again once the clock has rolled over.
pub(super) async fn refused_until_the_window_rolls_over(
    runs: &Arc<RunManager>,
    offset: &AtomicI64,
    now: DateTime<Utc>,
) {
    match run(runs, "alice").await {
        Err(RunError::BudgetExceeded { retry_after, .. }) => {
            let to_midnight = (BudgetWindow::Day.end(now) - now).num_seconds();
            assert!(
                retry_after.abs_diff(to_midnight.unsigned_abs()) <= 2,
                "{retry_after}"
            );
        }
        other => panic!("a tenant over budget started a run: {other:?}"),
    }
    offset.store(86_400, Ordering::SeqCst);
    let next_day = run(runs, "alice").await.unwrap();
    assert_eq!(next_day.status, RunStatus::Completed);
}
