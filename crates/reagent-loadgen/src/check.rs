//! End-of-load consistency checks: the process (`/metrics` back to idle) and the database
//! (opened read-only: every run terminal, its events 1..n ending with `done`).

use std::path::Path;
use std::time::{Duration, Instant};

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Row};

use crate::load::{metric, scrape};

/// Idle figures of `/metrics`.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Gauges {
    pub active_runs: f64,
    pub sse_subscribers: f64,
    pub alive_tasks: f64,
}

pub async fn gauges(http: &reqwest::Client, base: &str) -> Option<Gauges> {
    let text = scrape(http, base).await?;
    Some(Gauges {
        active_runs: metric(&text, "reagent_active_runs")?,
        sse_subscribers: metric(&text, "reagent_sse_subscribers").unwrap_or(0.0),
        alive_tasks: metric(&text, "reagent_tokio_alive_tasks").unwrap_or(f64::NAN),
    })
}

/// Waits (up to `within`) for no active run, no SSE subscriber and at most `max_tasks` alive
/// tokio tasks; returns the violations still present at the end. (The server's HTTP client keeps
/// idle keep-alive connections to the LLM for 90 s, one task each, so callers allow the idle
/// count plus one per concurrent conversation: a per-run leak exceeds that.)
pub async fn quiesced(
    http: &reqwest::Client,
    base: &str,
    max_tasks: f64,
    within: Duration,
) -> (Option<Gauges>, Vec<String>) {
    let t0 = Instant::now();
    loop {
        let g = gauges(http, base).await;
        let mut errs = Vec::new();
        match g {
            None => errs.push("/metrics unreadable".to_string()),
            Some(g) => {
                if g.active_runs != 0.0 {
                    errs.push(format!("{} runs still active", g.active_runs));
                }
                if g.sse_subscribers != 0.0 {
                    errs.push(format!(
                        "{} SSE subscribers still counted",
                        g.sse_subscribers
                    ));
                }
                if g.alive_tasks.is_finite() && max_tasks.is_finite() && g.alive_tasks > max_tasks {
                    errs.push(format!(
                        "{} tokio tasks alive, more than {max_tasks} (idle before the load + one per concurrent conversation)",
                        g.alive_tasks
                    ));
                }
            }
        }
        if errs.is_empty() || t0.elapsed() > within {
            return (g, errs);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What the database holds after the load.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct DbReport {
    pub runs: i64,
    pub events: i64,
    pub interrupts: i64,
    pub errors: Vec<String>,
}

/// Opens the SQLite file read-only and checks every run.
pub async fn database(path: &Path) -> anyhow::Result<DbReport> {
    let mut conn = SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .connect()
        .await?;
    let mut report = DbReport::default();
    let rows = sqlx::query("SELECT id, status FROM runs")
        .fetch_all(&mut conn)
        .await?;
    report.runs = rows.len() as i64;
    for row in &rows {
        let (id, status): (String, String) = (row.try_get(0)?, row.try_get(1)?);
        if !["completed", "max_iterations", "cancelled", "failed"].contains(&status.as_str()) {
            report
                .errors
                .push(format!("run {id}: status {status:?} is not terminal"));
        }
    }
    let per_run = sqlx::query(
        // A row holds `n` events, `seq ..= seq + n - 1` (src/store/events.rs).
        "SELECT r.id, CAST(COALESCE(SUM(e.n), 0) AS BIGINT), COALESCE(MIN(e.seq), 0),
                COALESCE(MAX(e.seq + e.n - 1), 0),
                (SELECT name FROM events l WHERE l.run = k.key ORDER BY l.seq DESC LIMIT 1)
         FROM runs r LEFT JOIN run_keys k ON k.run_id = r.id LEFT JOIN events e ON e.run = k.key
         GROUP BY r.id, k.key",
    )
    .fetch_all(&mut conn)
    .await?;
    for row in &per_run {
        let id: String = row.try_get(0)?;
        let (count, min, max): (i64, i64, i64) =
            (row.try_get(1)?, row.try_get(2)?, row.try_get(3)?);
        let last: Option<String> = row.try_get(4)?;
        report.events += count;
        if count == 0 || min != 1 || max != count {
            report.errors.push(format!(
                "run {id}: events not contiguous from 1 (count {count}, min {min}, max {max})"
            ));
        } else if last.as_deref() != Some("done") {
            report
                .errors
                .push(format!("run {id}: last event is {last:?}, not done"));
        }
    }
    report.interrupts =
        sqlx::query_scalar("SELECT COUNT(*) FROM messages WHERE kind = 'interrupt'")
            .fetch_one(&mut conn)
            .await?;
    report.errors.truncate(50);
    Ok(report)
}
