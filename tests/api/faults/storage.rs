//! Storage faults through the whole service (issue 37): the database stops taking writes while
//! a run is in flight, then takes them again.
//!
//! SQLite: a real tmpfs of 8 MiB ([`SmallFs`]) holding the database, filled with a ballast
//! file (after the WAL is checkpointed and truncated, so no write finds room left in it), then
//! freed; skipped, saying so, only where the machine cannot mount. PostgreSQL: triggers in the
//! scenario's own database refuse every insert with SQLSTATE 53100 (`disk_full`, what the
//! server answers when it cannot extend a file), then are dropped.
//!
//! Checked on both: no 201/202 for a write that is not stored (every acknowledged row is found,
//! also after a restart); `/readyz` answers 503 naming the problem while writes fail and 200
//! once they commit again; a run in flight ends visibly — `done` with status `failed` and an
//! error saying its progress could not be stored — and that end is stored once writes commit.
//! And a server stopped during the outage stops (the writer's retrying gives way).

use sqlx::Connection;

use super::*;
use crate::support::backends::{run_on, Backend};
use crate::support::fullfs::SmallFs;

/// How the database is made to refuse writes and take them again.
enum Outage {
    Disk(SmallFs),
    Triggers(sqlx::PgPool),
}

const REFUSE: &str = "CREATE FUNCTION refuse_writes() RETURNS trigger LANGUAGE plpgsql AS \
    $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' \
    USING ERRCODE = 'disk_full'; END $$";
const REFUSED: [&str; 5] = ["conversations", "runs", "messages", "events", "write_probe"];

impl Outage {
    async fn start(&self, db_url: &str) {
        match self {
            Outage::Disk(fs) => {
                // A WAL truncated to nothing: every write must grow it, so every write fails.
                let mut c = sqlx::SqliteConnection::connect(db_url).await.unwrap();
                sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                    .execute(&mut c)
                    .await
                    .unwrap();
                c.close().await.unwrap();
                fs.fill();
            }
            Outage::Triggers(pg) => {
                sqlx::query(REFUSE).execute(pg).await.unwrap();
                for table in REFUSED {
                    let sql = format!(
                        "CREATE TRIGGER refuse_{table} BEFORE INSERT OR UPDATE ON {table} \
                         FOR EACH ROW EXECUTE FUNCTION refuse_writes()"
                    );
                    sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
                        .execute(pg)
                        .await
                        .unwrap();
                }
            }
        }
    }

    async fn end(&self) {
        match self {
            Outage::Disk(fs) => fs.free(),
            Outage::Triggers(pg) => {
                sqlx::query("DROP FUNCTION refuse_writes() CASCADE")
                    .execute(pg)
                    .await
                    .unwrap();
            }
        }
    }
}

#[tokio::test]
async fn sqlite_full_disk_is_reported_and_nothing_unstored_is_acknowledged() {
    crate::support::log::init();
    let Some(fs) = SmallFs::mount(8) else { return };
    let url = fs.sqlite_url();
    outage_scenario(url, Outage::Disk(fs)).await;
}

#[tokio::test]
async fn postgres_refused_writes_are_reported_and_never_acknowledged() {
    run_on(Backend::Postgres, |url| async move {
        let pg = sqlx::PgPool::connect(&url).await.unwrap();
        // The app migrates its database first: the triggers need its tables.
        outage_scenario(url, Outage::Triggers(pg.clone())).await;
        pg.close().await;
    })
    .await;
}

async fn outage_scenario(url: String, outage: Outage) {
    let app = TestApp::with(Options {
        db_url: Some(url.clone()),
        ..Options::default()
    })
    .await;
    // The run calls `gate` twice: it is in flight, between tool calls, when writes fail.
    app.llm.tool_calls(&[("c1", "gate", "{}")]);
    app.llm.tool_calls(&[("c2", "gate", "{}")]);
    app.llm.text("never reached");
    let conv = app.create_conversation(None).await;
    let idle = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    app.wait_for(&run, |e| e.label() == "step:tool_start").await;

    outage.start(&url).await;
    let acked = acknowledged_only_if_stored(&app, &idle).await;
    let ready = app.get("/readyz", None).await;
    assert_eq!(ready.status(), 503);
    let body: Value = ready.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("writes are failing"), "{body}");
    // The run goes on, cannot store its next events, and ends failed saying why.
    app.gate.release();
    let events = app.events(&run, None).await;
    let d = &events.last().unwrap().data;
    assert_eq!(events.last().unwrap().event, "done");
    assert_eq!(d["status"], "failed", "{d}");
    assert!(
        d["error"].as_str().unwrap().contains("could not be stored"),
        "{d}"
    );

    outage.end().await;
    eventually("/readyz 200 once writes commit", || async {
        app.get("/readyz", None).await.status() == 200
    })
    .await;
    let after = app.create_conversation(None).await;
    let found = app.get(&format!("/api/conversations/{after}"), None).await;
    assert_eq!(found.status(), 200, "201 for a conversation not stored");
    let path = format!("/api/runs/{run}");
    eventually("the run's failed end stored", || async {
        app.get_json(&path, None).await["status"] == "failed"
    })
    .await;
    let db_url = app.db_url.clone();
    let keep = app.stop().await;
    let app = TestApp::spawn_on(&db_url).await;
    for id in acked.iter().chain([&after, &conv]) {
        let r = app.get(&format!("/api/conversations/{id}"), None).await;
        assert_eq!(r.status(), 200, "conversation {id} lost after a restart");
    }
    let row = app.get_json(&path, None).await;
    assert_eq!(row["status"], "failed", "{row}");
    assert!(row["error"]
        .as_str()
        .unwrap()
        .contains("could not be stored"));
    app.stop().await;
    drop(keep);
}

/// Creates conversations and starts a run in `idle` until the database refuses one: every
/// 201/202 before that must be stored, and a refusal is a 503 (`unavailable`). Returns the
/// conversations acknowledged.
async fn acknowledged_only_if_stored(app: &TestApp, idle: &str) -> Vec<String> {
    let mut acked = Vec::new();
    let mut refusals = Vec::new();
    for _ in 0..20 {
        let r = app
            .post("/api/conversations", json!({"title": "t"}), None)
            .await;
        if r.status() != 201 {
            refusals.push(r.status().as_u16());
            break;
        }
        let id = r.json::<Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        let found = app.get(&format!("/api/conversations/{id}"), None).await;
        assert_eq!(found.status(), 200, "201 for a conversation not stored");
        acked.push(id);
    }
    assert!(
        !refusals.is_empty(),
        "the database took every write: the test proves nothing"
    );
    let r = app
        .post(
            &format!("/api/conversations/{idle}/runs"),
            json!({"query": "q"}),
            None,
        )
        .await;
    if r.status() == 202 {
        let run = r.json::<Value>().await.unwrap()["run_id"]
            .as_str()
            .unwrap()
            .to_string();
        let found = app.get(&format!("/api/runs/{run}"), None).await;
        assert_eq!(found.status(), 200, "202 for a run not stored");
    } else {
        refusals.push(r.status().as_u16());
    }
    assert!(
        refusals.iter().all(|s| *s == 503),
        "refused with {refusals:?}"
    );
    acked
}

/// Stopping the server while writes fail does not hang: the writer gives up what it cannot
/// write (the run stays `running` in the database, for the next start's recovery).
#[tokio::test]
async fn postgres_a_server_stops_while_writes_fail() {
    run_on(Backend::Postgres, |url| async move {
        let pg = sqlx::PgPool::connect(&url).await.unwrap();
        let outage = Outage::Triggers(pg.clone());
        let app = TestApp::spawn_on(&url).await;
        app.llm.tool_calls(&[("c1", "gate", "{}")]);
        app.llm.text("never reached");
        let conv = app.create_conversation(None).await;
        let run = app.start_run(&conv, json!({"query": "q"}), None).await;
        app.wait_for(&run, |e| e.label() == "step:tool_start").await;
        outage.start(&url).await;
        app.gate.release();
        let stopped = tokio::time::timeout(Duration::from_secs(30), app.stop()).await;
        assert!(
            stopped.is_ok(),
            "the server hung stopping during a storage outage"
        );
        outage.end().await;
        pg.close().await;
    })
    .await;
}
