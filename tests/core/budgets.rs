//! Budgets on both backends (docs/configuration.md `[[budgets]]`): twenty concurrent runs of one
//! tenant through two run managers (two instances) on one database against a budget of a few
//! calls — never more spent than the limit (each call's actual usage is within its reserved
//! worst case, so the overshoot bound, "the reservations in flight", is zero here), every run
//! ends `completed` or `budget_exceeded` with an answer, no reservation is left, another tenant
//! is unaffected; new runs are refused until the window rolls over (an injected clock); a
//! dead process's reservations go back at recovery, its settled spend stays.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use reagent::agent::RunStatus;
use reagent::config::{BudgetSpec, BudgetWindow};
use reagent::domain::{Mode, Price};
use reagent::llm::{
    Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError, Message, StreamEvent, Usage,
};
use reagent::runs::ledger::{Ledger, SETTLE_AFTER};
use reagent::runs::{
    Budgets, ConversationRef, RunError, RunManager, RunParts, RunSettings, StartRun,
};
use reagent::store::{CallUsage, NewConversation, NewRun, Store, UsageGroup, WindowLimit};
use reagent::testing::scripted::single_model;
use uuid::Uuid;

mod concurrent;

/// Prompt and completion tokens of every call: far below any call's reserved worst case.
const PROMPT: u64 = 10;
const COMPLETION: u64 = 5;
/// The model's most output tokens, part of each reservation.
const MAX_OUTPUT: u32 = 50;

/// A model that answers at once, after a short wait so that runs overlap.
struct Answering;

fn usage() -> Usage {
    Usage::call(PROMPT, COMPLETION)
}

#[async_trait]
impl Llm for Answering {
    fn model(&self) -> &str {
        "answering"
    }
    fn abilities(&self) -> Abilities {
        Abilities::default()
    }
    fn max_output_tokens(&self) -> u32 {
        MAX_OUTPUT
    }
    async fn chat(&self, _: ChatRequest) -> Result<ChatResponse, LlmError> {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(ChatResponse {
            content: "the draft answer".into(),
            finish_reason: Some("stop".into()),
            usage: usage(),
            ..ChatResponse::default()
        })
    }
    async fn stream_chat(&self, _: ChatRequest) -> Result<ChatStream, LlmError> {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let events = vec![
            Ok(StreamEvent::Content("the synthesised answer".into())),
            Ok(StreamEvent::Usage(usage())),
            Ok(StreamEvent::Done {
                finish_reason: Some("stop".into()),
            }),
        ];
        Ok(Box::pin(futures::stream::iter(events)))
    }
}

/// A clock the test moves.
fn clock(offset: &Arc<AtomicI64>) -> reagent::runs::Clock {
    let offset = offset.clone();
    Arc::new(move || Utc::now() + chrono::Duration::seconds(offset.load(Ordering::SeqCst)))
}

fn manager(store: &Store, limit: u64, offset: &Arc<AtomicI64>) -> Arc<RunManager> {
    let parts = RunParts {
        budgets: budgets(limit, offset),
        ..RunParts::new(store.clone(), single_model(Arc::new(Answering)))
    };
    Arc::new(RunManager::new(parts, RunSettings::default()))
}

/// A day budget of `limit` tokens for alice, the `default` model priced.
fn budgets(limit: u64, offset: &Arc<AtomicI64>) -> Budgets {
    Budgets {
        rules: vec![BudgetSpec {
            tenant: "alice".into(),
            window: BudgetWindow::Day,
            tokens: Some(limit),
            cost_usd: None,
            warn_at_percent: 50,
        }],
        prices: [(
            "default".to_string(),
            Price {
                input: 1.0,
                output: 2.0,
                ..Price::default()
            },
        )]
        .into(),
        clock: clock(offset),
        ..Budgets::default()
    }
}

/// Starts a run of `owner` in a new conversation and waits for its `done`.
async fn run(runs: &Arc<RunManager>, owner: &str) -> Result<reagent::agent::RunOutcome, RunError> {
    let conv = runs
        .store()
        .create_conversation(owner, NewConversation::default())
        .await
        .unwrap();
    let live = runs
        .start(
            owner,
            StartRun::new(ConversationRef::Existing(conv.id), "a question"),
        )
        .await?;
    live.finished().await;
    let events = runs.store().list_events(live.id, 0).await.unwrap();
    let done = events.iter().rev().find(|e| e.name == "done").unwrap();
    let outcome: reagent::agent::RunOutcome = serde_json::from_str(&done.data).unwrap();
    Ok(outcome)
}

fn day_start(at: DateTime<Utc>) -> i64 {
    BudgetWindow::Day.start(at).timestamp_micros()
}

async fn concurrent_runs_never_spend_past_the_limit(url: String) {
    let offset = Arc::new(AtomicI64::new(0));
    let (one, two) = (
        Store::connect(&url).await.unwrap(),
        Store::connect(&url).await.unwrap(),
    );
    // Room for a few calls' worst case (each reserves its prompt estimate plus 50 tokens).
    let limit = 300;
    let instances = [manager(&one, limit, &offset), manager(&two, limit, &offset)];
    let statuses = concurrent::twenty_runs_at_once(&instances).await;
    let now = Utc::now();
    let spent = concurrent::spent_within_the_limit(&one, limit, now).await;
    // The budget is used up for new runs (about 2,000 of 2,500 tokens cannot take another
    // call's worst case, so the runs that did not finish say so).
    let refused_or_cut = 20
        - statuses
            .iter()
            .filter(|s| **s == RunStatus::Completed)
            .count();
    assert!(
        refused_or_cut > 0,
        "all twenty runs fit a budget of a few calls"
    );

    // Another tenant has no budget: it runs.
    let bob = run(&instances[0], "bob").await.unwrap();
    assert_eq!(bob.status, RunStatus::Completed);

    // Spend the rest so that admission refuses, then roll the window over.
    concurrent::spend_the_rest(&one, limit, now, limit as i64 - spent).await;
    concurrent::refused_until_the_window_rolls_over(&instances[1], &offset, now).await;
}

async fn recovery_releases_a_dead_processs_reservations(url: String) {
    let store = Store::connect(&url).await.unwrap();
    let conv = store
        .create_conversation("alice", NewConversation::default())
        .await
        .unwrap();
    let run_id = Uuid::new_v4();
    store
        .create_run(NewRun {
            id: run_id,
            conversation_id: conv.id,
            owner: "alice".into(),
            mode: Mode::Native,
            model: "default".into(),
            traceparent: None,
        })
        .await
        .unwrap();
    let window = [WindowLimit {
        kind: "day",
        starts_at: day_start(Utc::now()),
        tokens: Some(1_000),
        nanos: None,
    }];
    // One call settled, one in flight when the process died.
    let settled = store
        .reserve_budget("alice", run_id, &window, 300, 0)
        .await
        .unwrap();
    let usage = CallUsage {
        tenant: "alice".into(),
        run_id,
        prompt_tokens: 120,
        ..CallUsage::default()
    };
    store.settle_budget(settled.as_ref(), &usage).await.unwrap();
    store
        .reserve_budget("alice", run_id, &window, 400, 0)
        .await
        .unwrap()
        .unwrap();
    let offset = Arc::new(AtomicI64::new(0));
    let restarted = manager(&store, 1_000, &offset);
    restarted.recover().await.unwrap();
    let s = &store
        .budget_spend("alice", &[("day", window[0].starts_at)])
        .await
        .unwrap()[0];
    assert_eq!((s.spent_tokens, s.reserved_tokens), (120, 0), "{s:?}");
    restarted.shutdown(Duration::from_secs(2)).await;
}

/// A window's reservations never exceed its limit, whatever the interleaving: the conditional
/// write itself, from two store handles at once.
async fn reservations_never_exceed_the_limit(url: String) {
    let (one, two) = (
        Store::connect(&url).await.unwrap(),
        Store::connect(&url).await.unwrap(),
    );
    let window = WindowLimit {
        kind: "day",
        starts_at: day_start(Utc::now()),
        tokens: Some(1_000),
        nanos: Some(5_000),
    };
    let mut tasks = Vec::new();
    for i in 0..40 {
        let store = if i % 2 == 0 { one.clone() } else { two.clone() };
        let w = window.clone();
        tasks.push(tokio::spawn(async move {
            store
                .reserve_budget("t", Uuid::new_v4(), &[w], 100, 300)
                .await
                .unwrap()
                .is_some()
        }));
    }
    let mut granted = 0;
    for t in tasks {
        granted += usize::from(t.await.unwrap());
    }
    // 5,000 nano-dollars fit 16 reservations of 300; 1,000 tokens fit 10 of 100.
    assert_eq!(granted, 10);
    let s = &one
        .budget_spend("t", &[("day", window.starts_at)])
        .await
        .unwrap()[0];
    assert_eq!((s.reserved_tokens, s.reserved_nanos), (1_000, 3_000));
}

/// A run's ledger and its model, on a day budget of `limit` tokens.
fn ledgered(store: &Store, limit: u64) -> (Arc<Ledger>, Arc<dyn Llm>) {
    let offset = Arc::new(AtomicI64::new(0));
    let b = Arc::new(budgets(limit, &offset));
    let ledger = Ledger::new(store.clone(), b, "alice", Uuid::new_v4(), "agent");
    let llm = ledger.wrap("default", Arc::new(Answering));
    (ledger, llm)
}

async fn alice_today(store: &Store) -> (i64, i64, i64) {
    let day = [("day", day_start(Utc::now()))];
    let s = &store.budget_spend("alice", &day).await.unwrap()[0];
    let calls = store
        .usage(Some("alice"), 0, i64::MAX, UsageGroup::Model)
        .await
        .unwrap()
        .iter()
        .map(|r| r.llm_calls)
        .sum();
    (s.spent_tokens, s.reserved_tokens, calls)
}

/// A call's settlement rides on the run's next reservation; the run's end settles the last
/// one: every call's spend in the window and in the usage ledger, nothing left reserved.
async fn the_runs_end_settles_its_last_call(url: String) {
    let store = Store::connect(&url).await.unwrap();
    let (ledger, llm) = ledgered(&store, 1_000_000);
    for _ in 0..3 {
        llm.chat(ChatRequest::new(vec![Message::user("q")]))
            .await
            .unwrap();
    }
    ledger.finish().await;
    let per_call = (PROMPT + COMPLETION) as i64;
    assert_eq!(alice_today(&store).await, (3 * per_call, 0, 3));
}

/// A call with no next one in its run and no end yet is settled on its own.
async fn a_lone_call_is_settled_without_the_runs_end(url: String) {
    let store = Store::connect(&url).await.unwrap();
    let (_ledger, llm) = ledgered(&store, 1_000_000);
    llm.chat(ChatRequest::new(vec![Message::user("q")]))
        .await
        .unwrap();
    let per_call = (PROMPT + COMPLETION) as i64;
    // A bounded wait for the settlement timer, not a timing assertion.
    let waited = tokio::time::timeout(SETTLE_AFTER * 20, async {
        while alice_today(&store).await != (per_call, 0, 1) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "{:?}", alice_today(&store).await);
}

/// The reservation that does not fit still settles the call before it (one transaction tried,
/// then the settlement alone): nothing is left reserved and the run's spend is all there.
async fn a_refused_reservation_still_settles_the_call_before(url: String) {
    let store = Store::connect(&url).await.unwrap();
    let (ledger, llm) = ledgered(&store, 200);
    let mut made = 0_i64;
    let refused = loop {
        match llm.chat(ChatRequest::new(vec![Message::user("q")])).await {
            Ok(_) => made += 1,
            Err(e) => break e,
        }
        assert!(made < 50, "a budget of 200 tokens took {made} calls");
    };
    assert!(matches!(refused, LlmError::BudgetExceeded(_)), "{refused}");
    assert!(made >= 1 && ledger.refused());
    let per_call = (PROMPT + COMPLETION) as i64;
    assert_eq!(alice_today(&store).await, (made * per_call, 0, made));
}

on_both_backends!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    concurrent_runs_never_spend_past_the_limit,
    recovery_releases_a_dead_processs_reservations,
    reservations_never_exceed_the_limit,
    the_runs_end_settles_its_last_call,
    a_lone_call_is_settled_without_the_runs_end,
    a_refused_reservation_still_settles_the_call_before,
);
