//! A fresh PostgreSQL database for a load over several instances (created on an admin URL,
//! dropped `WITH (FORCE)` afterwards), and its consistency check once the load is over: no run
//! left `running`, each run's stored events rising from `start` to exactly one `done`, whose
//! status is the run's.

use anyhow::Context;
use serde_json::Value;
use sqlx::Row;

use crate::check::DbReport;

/// The maintenance database fresh databases are created from (as `tests/support/backends.rs`).
pub const PG_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

pub struct PgDb {
    pub url: String,
    admin: sqlx::PgPool,
    name: String,
}

impl PgDb {
    /// `reagent_loadgen_<random>` on the server of `admin_url`.
    pub async fn create(admin_url: &str) -> anyhow::Result<PgDb> {
        let admin = sqlx::PgPool::connect(admin_url)
            .await
            .with_context(|| format!("PostgreSQL unreachable at {admin_url}"))?;
        let name = format!("reagent_loadgen_{}", uuid::Uuid::new_v4().simple());
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&admin)
            .await?;
        let base = admin_url.rsplit_once('/').map_or(admin_url, |(b, _)| b);
        Ok(PgDb {
            url: format!("{base}/{name}"),
            admin,
            name,
        })
    }

    /// Drops the database, closing any connection left to it.
    pub async fn drop(self) -> anyhow::Result<()> {
        let dropped = sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        )))
        .execute(&self.admin)
        .await;
        self.admin.close().await;
        dropped?;
        Ok(())
    }
}

/// Reads every run of the database at `url` (after the instances stopped) and checks it.
pub async fn consistency(url: &str) -> anyhow::Result<DbReport> {
    let pool = sqlx::PgPool::connect(url).await?;
    let mut report = DbReport::default();
    let rows = sqlx::query("SELECT id, status FROM runs")
        .fetch_all(&pool)
        .await?;
    report.runs = rows.len() as i64;
    for row in &rows {
        let (id, status): (String, String) = (row.try_get(0)?, row.try_get(1)?);
        let (names, last) = stored_events(&pool, &id).await?;
        report.events += names.len() as i64;
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        report
            .errors
            .extend(run_errors(&id, &status, &names, last.as_deref()));
    }
    report.interrupts =
        sqlx::query_scalar("SELECT COUNT(*) FROM messages WHERE kind = 'interrupt'")
            .fetch_one(&pool)
            .await?;
    report.errors.truncate(50);
    pool.close().await;
    Ok(report)
}

/// A run's stored event names in id order, and its last event's data. The server packs `n`
/// consecutive events of one name into a row, their data joined by newlines (src/store/events.rs);
/// read here with plain SQL so that the load generator needs no server code.
async fn stored_events(
    pool: &sqlx::PgPool,
    run: &str,
) -> anyhow::Result<(Vec<String>, Option<String>)> {
    let rows = sqlx::query(
        "SELECT e.n, e.name, e.data FROM events e JOIN run_keys k ON k.key = e.run \
         WHERE k.run_id = $1 ORDER BY e.seq",
    )
    .bind(run)
    .fetch_all(pool)
    .await?;
    let mut names = Vec::new();
    let mut last = None;
    for row in rows {
        let (n, name, data): (i64, String, String) =
            (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
        names.extend(std::iter::repeat_n(name, usize::try_from(n).unwrap_or(0)));
        // A row of one event is that event's data whole.
        last = if n == 1 {
            Some(data)
        } else {
            data.rsplit('\n').next().map(str::to_string)
        };
    }
    Ok((names, last))
}

/// One run's violations: its status, and its stored event names (ascending ids, as the store
/// returns them) with the last event's data.
pub fn run_errors(id: &str, status: &str, names: &[&str], last_data: Option<&str>) -> Vec<String> {
    let mut errs = Vec::new();
    if status == "running" {
        errs.push(format!("run {id}: still running after the load"));
        return errs;
    }
    if names.first() != Some(&"start") {
        errs.push(format!(
            "run {id}: first stored event is {:?}, not start",
            names.first()
        ));
    }
    let dones = names.iter().filter(|n| **n == "done").count();
    if dones != 1 || names.last() != Some(&"done") {
        errs.push(format!(
            "run {id}: {dones} done events, last event {:?}",
            names.last()
        ));
        return errs;
    }
    let done: Value = last_data
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or_default();
    if done["status"].as_str() != Some(status) {
        errs.push(format!(
            "run {id}: status {status:?} but done says {}",
            done["status"]
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::run_errors;

    #[test]
    fn each_inconsistency_is_reported() {
        let ok = ["start", "step", "answer", "done"];
        let done = r#"{"status":"completed"}"#;
        assert!(run_errors("r", "completed", &ok, Some(done)).is_empty());
        assert!(run_errors("r", "running", &ok, Some(done))[0].contains("still running"));
        assert!(run_errors("r", "failed", &ok, Some(done))[0].contains("done says"));
        let twice = ["start", "done", "done"];
        assert!(run_errors("r", "completed", &twice, Some(done))[0].contains("2 done"));
        let cut = ["start", "step"];
        assert!(run_errors("r", "completed", &cut, None)[0].contains("0 done"));
        let headless = ["step", "done"];
        assert!(run_errors("r", "completed", &headless, Some(done))[0].contains("not start"));
    }
}
