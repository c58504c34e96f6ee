use std::sync::Arc;
use std::time::Duration;

use super::keyed::Keyed;
use super::EVENTS_CHANNEL;

/// Whether `watch` wakes within a short while: `Some(missed)` if it did.
async fn woke(watch: &super::Watch) -> Option<Option<bool>> {
    tokio::time::timeout(Duration::from_millis(50), watch.next())
        .await
        .ok()
}

#[tokio::test]
async fn a_hint_wakes_only_the_watchers_of_the_keys_it_names() {
    let keyed = Arc::new(Keyed::default());
    let a = keyed.watch(EVENTS_CHANNEL, "run-a");
    let b = keyed.watch(EVENTS_CHANNEL, "run-b");
    let c = keyed.watch(EVENTS_CHANNEL, "run-c");
    let other = keyed.watch("reagent_commands", "run-a");
    keyed.notified(EVENTS_CHANNEL, "run-x,run-a,run-c");
    assert_eq!(woke(&a).await, Some(Some(false)));
    assert_eq!(woke(&b).await, None, "run-b was not named");
    assert_eq!(woke(&c).await, Some(Some(false)));
    assert_eq!(woke(&other).await, None, "another channel");
}

#[tokio::test]
async fn hints_while_busy_collapse_into_one_wake_up_and_none_is_lost() {
    let keyed = Arc::new(Keyed::default());
    let a = keyed.watch(EVENTS_CHANNEL, "run-a");
    // Two hints before the watcher waits: it wakes once, at once.
    keyed.notified(EVENTS_CHANNEL, "run-a");
    keyed.notified(EVENTS_CHANNEL, "run-a");
    assert_eq!(woke(&a).await, Some(Some(false)));
    assert_eq!(woke(&a).await, None);
}

#[tokio::test]
async fn an_empty_payload_wakes_the_channel_and_a_missed_hint_everyone_with_the_flag() {
    let keyed = Arc::new(Keyed::default());
    let a = keyed.watch(EVENTS_CHANNEL, "run-a");
    let other = keyed.watch("reagent_commands", "run-a");
    keyed.notified(EVENTS_CHANNEL, "");
    assert_eq!(woke(&a).await, Some(Some(false)));
    assert_eq!(woke(&other).await, None);
    keyed.missed();
    assert_eq!(woke(&a).await, Some(Some(true)));
    assert_eq!(woke(&other).await, Some(Some(true)));
    // The flag is told once.
    keyed.notified(EVENTS_CHANNEL, "run-a");
    assert_eq!(woke(&a).await, Some(Some(false)));
}

#[tokio::test]
async fn a_closed_listener_ends_every_watch_and_a_dropped_watch_is_forgotten() {
    let keyed = Arc::new(Keyed::default());
    let a = keyed.watch(EVENTS_CHANNEL, "run-a");
    let b = keyed.watch(EVENTS_CHANNEL, "run-a");
    assert_eq!(keyed.watched(), 2);
    drop(b);
    assert_eq!(keyed.watched(), 1);
    let waiting = tokio::spawn(async move { a.next().await });
    tokio::task::yield_now().await;
    keyed.close();
    assert_eq!(waiting.await.unwrap(), None);
    assert_eq!(keyed.watched(), 0, "the ended watch unregistered itself");
    let late = keyed.watch(EVENTS_CHANNEL, "run-b");
    assert_eq!(
        woke(&late).await,
        Some(None),
        "a watch made after the close ends at once"
    );
}
