//! Losing a lease (docs/deployment.md): another instance took the run (a new epoch on its row); at the
//! next renewal this process stops the run's task without writing anything more, its log
//! closes without `done`, and the row stays the taker's.

use super::*;
use crate::runs::LeaseTimes;
use crate::store::LeaseHolder;

#[tokio::test]
async fn a_run_whose_lease_was_taken_stops_without_writing() {
    let mut f = fixture_with(Arc::new(ScriptedLlm::native()), Arc::new(Broken::Hanging)).await;
    let ttl = Duration::from_secs(20);
    {
        let runs = Arc::get_mut(&mut f.runs).expect("the fixture's only handle");
        runs.settings.instance_id = "a".into();
        runs.settings.lease = LeaseTimes {
            ttl,
            renew: Duration::from_millis(50),
        };
    }
    f.store.hold_leases_as(LeaseHolder {
        instance: "a".into(),
        ttl,
    });
    let conv = f.conversation("").await;
    let live = f.start_in("", conv, "q").await.unwrap();
    f.runs.start_leases();
    // Renewed while it holds the lease.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!live.lost.is_cancelled());
    assert_eq!(f.runs.lease_counts().owned, 1);
    let taken = f.store.take_run(live.id, "b", ttl).await.unwrap().unwrap();
    assert_eq!(taken.epoch, 2);
    tokio::time::timeout(Duration::from_secs(5), live.finished())
        .await
        .expect("the lost run stops");
    assert!(live.log.is_closed());
    let seen: Vec<_> = live.log.subscribe(0).events.collect().await;
    assert!(seen.iter().all(|e| e.name != "done"), "no done of ours");
    assert_eq!(f.runs.active_runs(), 0, "the conversation is free here");
    assert_eq!(f.runs.lease_counts().owned, 0);
    let row = f.store.get_run_any(live.id).await.unwrap().unwrap();
    assert_eq!(row.status, RunStatus::Running, "left to the taker");
    let states = f.store.lease_states(&[live.id]).await.unwrap();
    assert_eq!(states, [(live.id, Some("b".to_string()), 2)]);
    assert!(f
        .store
        .list_events(live.id, 0)
        .await
        .unwrap()
        .iter()
        .all(|e| e.name != "done"));
}
