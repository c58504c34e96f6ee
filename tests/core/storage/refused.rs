//! PostgreSQL refusing writes the way it does when its disk is full: triggers in the
//! scenario's own database raise SQLSTATE 53100 (`disk_full`) on every insert and update, then
//! are dropped. (Filling the shared server's disk is not an option; the error is the same.)

use reagent::store::NewConversation;

use super::*;
use crate::support::backends::{run_on, Backend};

const REFUSE: &str = "CREATE FUNCTION refuse_writes() RETURNS trigger LANGUAGE plpgsql AS \
    $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' \
    USING ERRCODE = 'disk_full'; END $$";

/// Every refused write is an error (`Unavailable`, never an acknowledgement), the store is not
/// ready while writes fail, and is again once one commits.
#[tokio::test]
async fn postgres_acknowledges_only_committed_writes() {
    run_on(Backend::Postgres, |url| async move {
        let store = Store::connect(&url).await.unwrap();
        let pg = sqlx::PgPool::connect(&url).await.unwrap();
        let conv = store
            .create_conversation("o", NewConversation::default())
            .await
            .unwrap()
            .id;
        assert_eq!(store.readiness().await, Ok(()));
        sqlx::query(REFUSE).execute(&pg).await.unwrap();
        for table in ["conversations", "runs", "write_probe"] {
            let sql = format!(
                "CREATE TRIGGER refuse_{table} BEFORE INSERT OR UPDATE ON {table} \
                 FOR EACH ROW EXECUTE FUNCTION refuse_writes()"
            );
            sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
                .execute(&pg)
                .await
                .unwrap();
        }
        let refused = store
            .create_conversation("o", NewConversation::default())
            .await;
        assert!(
            matches!(refused, Err(StoreError::Unavailable(_))),
            "{refused:?}"
        );
        let refused = start_run(&store, conv, "q".into()).await;
        assert!(
            matches!(refused, Err(StoreError::Unavailable(_))),
            "{refused:?}"
        );
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
            .fetch_one(&pg)
            .await
            .unwrap();
        assert_eq!(count, 0, "a refused run start left a row");
        let not_ready = store.readiness().await.unwrap_err();
        assert!(not_ready.contains("the disk is full"), "{not_ready}");
        sqlx::query("DROP FUNCTION refuse_writes() CASCADE")
            .execute(&pg)
            .await
            .unwrap();
        assert_eq!(
            store.readiness().await,
            Ok(()),
            "the probe write commits again"
        );
        let run = start_run(&store, conv, "q".into()).await.unwrap();
        assert!(store.get_run_any(run).await.unwrap().is_some());
        pg.close().await;
        store.close().await;
    })
    .await;
}
