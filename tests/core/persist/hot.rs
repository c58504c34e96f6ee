//! Runs followed through another instance ("hot"): their new events are written between ticks
//! as they come; the other runs' wait for the tick; the flag lapses after its TTL. The writer's
//! interval here is an hour, so anything stored after the first tick was written early.

use super::*;

on_both_backends!(
    via crate::persist::with_store;
    #[tokio::test]
    a_hot_run_is_written_early_and_a_cold_one_waits_for_the_tick,
    #[tokio::test]
    the_hot_flag_lapses_after_its_ttl,
    #[tokio::test]
    an_ask_before_the_run_is_registered_is_kept,
);

const AN_HOUR: Duration = Duration::from_secs(3600);
const LONG_TTL: Duration = Duration::from_secs(600);

/// Two registered runs with one event each, both stored by the writer's first tick; the next
/// tick is an hour away.
async fn two_runs_after_the_first_tick(
    store: &Store,
) -> (Arc<EventWriter>, [(Uuid, Arc<EventLog>, Heat); 2]) {
    let writer = EventWriter::new(store.clone(), AN_HOUR);
    let mut runs = Vec::new();
    for _ in 0..2 {
        let (_, run) = new_run(store).await;
        let log = Arc::new(EventLog::new());
        let heat = writer.register(run, log.clone()).heat;
        log.append("step", "{\"i\":1}".into());
        runs.push((run, log, heat));
    }
    // Started after both appends: its first tick takes both.
    tokio::spawn(writer.clone().run());
    writer.notify();
    for (run, ..) in &runs {
        stored(store, *run, 1).await;
    }
    let runs: [(Uuid, Arc<EventLog>, Heat); 2] = runs.try_into().ok().unwrap();
    (writer, runs)
}

/// Waits until `n` events of `run` are stored.
async fn stored(store: &Store, run: Uuid, n: usize) {
    crate::support::eventually("the events are stored", || async {
        event_names(store, run).await.len() >= n
    })
    .await;
}

async fn a_hot_run_is_written_early_and_a_cold_one_waits_for_the_tick(store: Store) {
    let (writer, [(hot, hot_log, hot_heat), (cold, cold_log, cold_heat)]) =
        two_runs_after_the_first_tick(&store).await;
    assert!(writer.heat(hot, LONG_TTL));
    assert!(hot_heat.is_hot() && !cold_heat.is_hot());
    assert_eq!(writer.followed_runs(), 1);
    // The cold run's event first: a write that took every run's would take it too.
    cold_log.append("step", "{\"i\":2}".into());
    writer.appended(&cold_heat);
    hot_log.append("step", "{\"i\":2}".into());
    writer.appended(&hot_heat);
    stored(&store, hot, 2).await;
    assert_eq!(
        event_names(&store, cold).await.len(),
        1,
        "the cold run's event waits for the tick"
    );
    // Counted once the write returns, which is after its commit is visible.
    crate::support::eventually("the hot write is counted", || async {
        writer.hot_writes() >= 1
    })
    .await;
    writer.stop();
}

async fn the_hot_flag_lapses_after_its_ttl(store: Store) {
    let (writer, [(a, a_log, a_heat), (b, b_log, b_heat)]) =
        two_runs_after_the_first_tick(&store).await;
    assert!(writer.heat(a, Duration::from_millis(50)));
    assert!(a_heat.is_hot());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(writer.followed_runs(), 0, "the ask lapsed");
    assert!(!a_heat.is_hot());
    a_log.append("step", "{\"i\":2}".into());
    writer.appended(&a_heat);
    // A hot write of `b` after `a`'s append: had `a` still been hot, it would carry `a` too.
    assert!(writer.heat(b, LONG_TTL));
    b_log.append("step", "{\"i\":2}".into());
    writer.appended(&b_heat);
    stored(&store, b, 2).await;
    assert_eq!(event_names(&store, a).await.len(), 1, "a lapsed run waits");
    // Asked again: its pending event is written at once.
    assert!(writer.heat(a, LONG_TTL));
    stored(&store, a, 2).await;
    writer.stop();
}

async fn an_ask_before_the_run_is_registered_is_kept(store: Store) {
    let writer = EventWriter::new(store.clone(), AN_HOUR);
    let (_, run) = new_run(&store).await;
    assert!(!writer.heat(run, LONG_TTL), "not written here yet");
    assert!(!writer.heat(Uuid::new_v4(), LONG_TTL));
    assert_eq!(writer.followed_runs(), 0, "only runs written here count");
    let log = Arc::new(EventLog::new());
    let heat = writer.register(run, log.clone()).heat;
    assert!(heat.is_hot(), "a run started after the ask starts hot");
    assert_eq!(writer.followed_runs(), 1);
    writer.stop();
}
