//! A run's end closes its commands (sent through other instances, PostgreSQL) in the
//! transaction that stores its `done`: with none pending the run finishes and later commands
//! are refused; with some pending — committed before, or committing while the end waits for
//! the run's row — its `done` and terminal state are held back (its other events are stored)
//! and no command is taken after, so the owner can do them first.

use reagent::store::CommandKind;

use super::*;

/// A batch that ends `run` after one event, closing its commands.
fn ending(conv: Uuid, run: Uuid) -> RunBatch {
    let mut finish = final_state(conv, run, "bye");
    finish.close_commands = true;
    RunBatch {
        run_id: run,
        events: vec![
            StoredEvent {
                seq: 1,
                name: "start".into(),
                data: "{}".into(),
            },
            done_event(2),
        ],
        finish: Some(finish),
        epoch: Some(1),
        ..RunBatch::default()
    }
}

async fn status(store: &Store, run: Uuid) -> RunStatus {
    store.get_run_any(run).await.unwrap().unwrap().status
}

#[tokio::test]
async fn an_end_with_no_command_pending_finishes_and_refuses_later_ones() {
    with_store(Backend::Postgres, |store| async move {
        let (conv, run) = new_run(&store).await;
        let written = store.write_batches(&[ending(conv, run)]).await.unwrap();
        assert_eq!(written, [Written::Stored(true)]);
        assert_eq!(event_names(&store, run).await, ["start", "done"]);
        let sent = store.send_command(run, CommandKind::Cancel, None);
        assert_eq!(sent.await.unwrap(), None, "refused once the run ended");
    })
    .await;
}

#[tokio::test]
async fn an_end_with_a_command_pending_is_held_back_and_closes_the_door() {
    with_store(Backend::Postgres, |store| async move {
        let (conv, run) = new_run(&store).await;
        let (_, other) = new_run(&store).await;
        let seq = store.send_command(run, CommandKind::Cancel, None).await;
        let seq = seq.unwrap().expect("the run is running");
        // With a run that has none, in the same transaction: that one ends.
        let both = [ending(conv, run), ending(conv, other)];
        let written = store.write_batches(&both).await.unwrap();
        assert_eq!(written, [Written::Held, Written::Stored(true)]);
        assert_eq!(event_names(&store, run).await, ["start"], "no `done`");
        assert_eq!(status(&store, run).await, RunStatus::Running);
        assert_eq!(status(&store, other).await, RunStatus::Completed);
        let late = store.send_command(run, CommandKind::Cancel, None);
        assert_eq!(late.await.unwrap(), None, "closed: no command after");
        let pending = store.pending_commands(Some(run)).await.unwrap();
        assert_eq!(pending.iter().map(|c| c.seq).collect::<Vec<_>>(), [seq]);

        // The owner did them; its end without the check is stored.
        assert!(store.claim_command(seq, None).await.unwrap());
        let mut again = ending(conv, run);
        again.events.remove(0);
        if let Some(f) = again.finish.as_mut() {
            f.close_commands = false;
        }
        let written = store.write_batches(&[again]).await.unwrap();
        assert_eq!(written, [Written::Stored(true)]);
        assert_eq!(event_names(&store, run).await, ["start", "done"]);
    })
    .await;
}

/// A command whose transaction holds the running run's row when the end comes commits first
/// (the end waits for the row) and is found: the end is held back, the command not lost.
#[tokio::test]
async fn an_end_waits_for_a_command_being_sent() {
    run_on(Backend::Postgres, |url| async move {
        let store = Store::connect(&url).await.unwrap();
        let pool = sqlx::PgPool::connect(&url).await.unwrap();
        let (conv, run) = new_run(&store).await;
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("SELECT id FROM runs WHERE id = $1 AND status = 'running' FOR SHARE")
            .bind(run.to_string())
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        sqlx::query("INSERT INTO run_commands (run_id, kind, created_at) VALUES ($1, 'cancel', 0)")
            .bind(run.to_string())
            .execute(&mut *tx)
            .await
            .unwrap();
        let end = tokio::spawn({
            let store = store.clone();
            async move { store.write_batches(&[ending(conv, run)]).await }
        });
        let pool_ref = &pool;
        eventually("the end waits for the run's row", || async move {
            let waiting: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE wait_event_type = 'Lock' AND datname = current_database()",
            )
            .fetch_one(pool_ref)
            .await
            .unwrap();
            (waiting > 0).then_some(())
        })
        .await;
        tx.commit().await.unwrap();
        assert_eq!(end.await.unwrap().unwrap(), [Written::Held]);
        assert_eq!(store.pending_commands(Some(run)).await.unwrap().len(), 1);
        assert_eq!(status(&store, run).await, RunStatus::Running);
        pool.close().await;
        store.close().await;
    })
    .await;
}

/// The writer answers a held-back end `CommandsPending` and keeps the run: its next `finish`
/// (the owner's, without the check) stores `done` after the events already stored.
#[tokio::test]
async fn the_writer_hands_a_held_end_back() {
    with_store(Backend::Postgres, |store| async move {
        let writer = EventWriter::new(store.clone(), Duration::from_millis(2));
        let task = tokio::spawn(writer.clone().run());
        let (conv, run) = new_run(&store).await;
        let seq = store.send_command(run, CommandKind::Cancel, None).await;
        let seq = seq.unwrap().expect("the run is running");
        let log = Arc::new(EventLog::new());
        writer.register(run, log.clone());
        log.append("start", "{}".into());
        let mut fin = final_state(conv, run, "bye");
        fin.close_commands = true;
        let held = writer.finish(run, Some((done_event(2), fin.clone()))).await;
        assert!(
            matches!(held, Err(PersistError::CommandsPending)),
            "{held:?}"
        );
        assert_eq!(event_names(&store, run).await, ["start"]);
        assert!(store.claim_command(seq, None).await.unwrap());
        fin.close_commands = false;
        let finished = writer.finish(run, Some((done_event(2), fin))).await;
        assert!(finished.unwrap());
        assert_eq!(event_names(&store, run).await, ["start", "done"]);
        writer.stop();
        task.await.unwrap();
    })
    .await;
}
