//! Events across schema changes: the run-key migration and packed rows, on both backends.

use super::*;

/// Fills a database migrated to the first schema only (events keyed by the run's UUID) with one
/// conversation and two runs of four events each, interleaved as the shared writer stored them.
macro_rules! first_schema_rows {
    ($pool:expr, $conv:expr, $runs:expr) => {{
        sqlx::query(
            "INSERT INTO conversations (id, owner, created_at, updated_at) \
             VALUES ($1, 'old', 1, 1)",
        )
        .bind($conv.to_string())
        .execute($pool)
        .await
        .unwrap();
        for (i, run) in $runs.iter().enumerate() {
            sqlx::query(
                "INSERT INTO runs (id, conversation_id, owner, status, mode, model, started_at) \
                 VALUES ($1, $2, 'old', 'completed', 'native', 'm', $3)",
            )
            .bind(run.to_string())
            .bind($conv.to_string())
            .bind(i as i64)
            .execute($pool)
            .await
            .unwrap();
        }
        for seq in 1..=4i64 {
            for run in $runs.iter() {
                sqlx::query(
                    "INSERT INTO events (run_id, seq, name, data) VALUES ($1, $2, 'step', $3)",
                )
                .bind(run.to_string())
                .bind(seq)
                .bind(format!("{{\"n\":{seq}}}"))
                .execute($pool)
                .await
                .unwrap();
            }
        }
    }};
}

/// Rows left in `events` and `run_keys`.
macro_rules! event_rows_left {
    ($pool:expr) => {{
        let mut left = 0i64;
        for table in ["events", "run_keys"] {
            let n: i64 =
                sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
                    .fetch_one($pool)
                    .await
                    .unwrap();
            left += n;
        }
        left
    }};
}

/// A copy of the backend's first migration alone, for a database as the first release left it.
fn first_schema_only(dir: &std::path::Path, backend: &str) -> std::path::PathBuf {
    let first = dir.join(format!("first-schema-{backend}"));
    std::fs::create_dir(&first).unwrap();
    let initial = "20240601000000_initial.sql";
    std::fs::copy(
        format!("migrations/{backend}/{initial}"),
        first.join(initial),
    )
    .unwrap();
    first
}

/// After the migration to run keys (the store was connected to a database filled by
/// `first_schema_rows!`): every event is still there, runs keep working, new runs get keys, and
/// deleting the conversation takes the events with it.
async fn migrated_events_survive(store: &Store, conv: Uuid, runs: [Uuid; 2]) {
    for run in runs {
        assert_eq!(store.list_events(run, 0).await.unwrap(), events(1..=4));
        assert_eq!(store.last_event_seq(run).await.unwrap(), 4);
    }
    store.append_events(runs[0], &events(4..=6)).await.unwrap();
    assert_eq!(store.list_events(runs[0], 0).await.unwrap(), events(1..=6));
    let fresh = run(store, "old", conv).await;
    store.append_events(fresh, &events(1..=2)).await.unwrap();
    assert_eq!(store.list_events(fresh, 0).await.unwrap(), events(1..=2));
    assert!(store.delete_conversation("old", conv).await.unwrap());
    for run in [runs[0], runs[1], fresh] {
        assert!(store.list_events(run, 0).await.unwrap().is_empty());
    }
}

/// The whole migration case on one backend: a database at the first schema, filled, then
/// opened by the store, checked, and counted after the delete.
macro_rules! run_key_migration_case {
    ($pool:ty, $url:expr, $backend:expr) => {{
        let dir = tempfile::tempdir().unwrap();
        let pool = <$pool>::connect($url).await.unwrap();
        let first = first_schema_only(dir.path(), $backend);
        let migrator = sqlx::migrate::Migrator::new(first.as_path()).await.unwrap();
        migrator.run(&pool).await.unwrap();
        let (conv, runs) = (Uuid::new_v4(), [Uuid::new_v4(), Uuid::new_v4()]);
        first_schema_rows!(&pool, conv, runs);
        pool.close().await;

        let store = Store::connect($url).await.unwrap();
        migrated_events_survive(&store, conv, runs).await;
        store.close().await;
        // Gone, not merely unreachable: the rows went with their runs.
        let pool = <$pool>::connect($url).await.unwrap();
        assert_eq!(event_rows_left!(&pool), 0);
        pool.close().await;
    }};
}

#[tokio::test]
async fn sqlite_events_survive_the_run_key_migration() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("old.db").display());
    run_key_migration_case!(sqlx::SqlitePool, &url, "sqlite");
}

#[tokio::test]
async fn postgres_events_survive_the_run_key_migration() {
    run_on(Backend::Postgres, |url| async move {
        run_key_migration_case!(sqlx::PgPool, &url, "postgres");
    })
    .await;
}

/// An answer's deltas as the engine logs them.
fn deltas(range: std::ops::RangeInclusive<i64>) -> Vec<StoredEvent> {
    numbered("answer", range, |seq| {
        format!("{{\"type\":\"delta\",\"content\":\"t{seq}\"}}")
    })
}

/// Rows in `events` (several events may share one).
macro_rules! event_rows {
    ($pool:expr) => {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM events")
            .fetch_one($pool)
            .await
            .unwrap()
    };
}

/// Consecutive events of one name share a row and read back one by one, whatever the retries.
macro_rules! packed_events_case {
    ($pool:ty, $url:expr) => {{
        let store = Store::connect($url).await.unwrap();
        let pool = <$pool>::connect($url).await.unwrap();
        let who = owner("packed");
        let id = run(&store, &who, conversation(&store, &who).await).await;

        store.append_events(id, &deltas(1..=10)).await.unwrap();
        assert_eq!(store.list_events(id, 0).await.unwrap(), deltas(1..=10));
        assert_eq!(event_rows!(&pool), 1);

        // A batch retried after an ambiguous commit, with the events that arrived since: the
        // stored row is extended, nothing is lost or doubled.
        store.append_events(id, &deltas(1..=20)).await.unwrap();
        assert_eq!(store.list_events(id, 0).await.unwrap(), deltas(1..=20));
        assert_eq!(store.last_event_seq(id).await.unwrap(), 20);
        assert_eq!(event_rows!(&pool), 1);

        // A stored event is never rewritten.
        let mut changed = deltas(1..=20);
        changed[2].data = "{\"changed\":true}".into();
        store.append_events(id, &changed).await.unwrap();
        assert_eq!(store.list_events(id, 0).await.unwrap(), deltas(1..=20));

        // Overlapping from another start: read back once each.
        store.append_events(id, &deltas(15..=30)).await.unwrap();
        assert_eq!(store.list_events(id, 0).await.unwrap(), deltas(1..=30));
        assert_eq!(store.last_event_seq(id).await.unwrap(), 30);
        assert_eq!(event_rows!(&pool), 2);

        // Resuming inside a row.
        assert_eq!(
            store.list_events_page(id, 16, 3).await.unwrap(),
            deltas(17..=19)
        );
        assert_eq!(store.list_events(id, 29).await.unwrap(), deltas(30..=30));
        assert_eq!(
            store.list_events_page(id, 0, 25).await.unwrap(),
            deltas(1..=25)
        );

        // Data with a newline (not one-line JSON) keeps a row of its own and reads back as is.
        let mut mixed = vec![StoredEvent {
            seq: 31,
            name: "answer".into(),
            data: "two\nlines".into(),
        }];
        mixed.extend(deltas(32..=33));
        store.append_events(id, &mixed).await.unwrap();
        assert_eq!(store.list_events(id, 30).await.unwrap(), mixed);
        assert_eq!(event_rows!(&pool), 4);

        pool.close().await;
        store.close().await;
    }};
}

#[tokio::test]
async fn sqlite_packs_consecutive_events() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("packed.db").display()
    );
    packed_events_case!(sqlx::SqlitePool, &url);
}

#[tokio::test]
async fn postgres_packs_consecutive_events() {
    run_on(Backend::Postgres, |url| async move {
        packed_events_case!(sqlx::PgPool, &url);
    })
    .await;
}
