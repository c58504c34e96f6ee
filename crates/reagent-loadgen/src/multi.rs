//! One conversation across several instances (docs/deployment.md, `--urls`): the conversation is created
//! on one instance, the run started on another, its events streamed from another, interrupt
//! and cancel sent through others (each a random pick). A broken stream is resumed with
//! `Last-Event-ID` on another instance; the joined stream is verified with the takeover rule
//! ([`crate::takeover`]) and against a full replay taken after the end.

use std::time::{Duration, Instant};

use eventsource_stream::Eventsource;
use futures::StreamExt;
use reagent_mock::{token_stamps, unix_micros};
use serde_json::{json, Value};

use crate::event::Ev;
use crate::plan::{ConvPlan, ConvResult, Side};
use crate::takeover;
use crate::targets::{send_any, Targets};
use crate::verify::{verify_with, Expect};

pub async fn run(
    http: &reqwest::Client,
    targets: &Targets,
    plan: &ConvPlan,
    n: usize,
) -> ConvResult {
    let mut result = ConvResult::default();
    let kills = targets.kills();
    let drive = drive(http, targets, plan, n, kills, &mut result);
    match tokio::time::timeout(plan.timeout, drive).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => result.errors.push(format!("{e:#}")),
        Err(_) => result.errors.push(format!(
            "run {}: no done within {:?}",
            result.run_id.as_deref().unwrap_or("?"),
            plan.timeout
        )),
    }
    result
}

/// Creates the conversation and starts its run on random instances; (conversation, run, where
/// the run was started).
async fn start(
    http: &reqwest::Client,
    targets: &Targets,
    plan: &ConvPlan,
    n: usize,
) -> anyhow::Result<(String, String, String)> {
    let (r, _) = send_any(targets, None, |b| {
        http.post(format!("{b}/api/conversations"))
            .json(&json!({"agent": plan.agent}))
    })
    .await?;
    let conv: Value = r.error_for_status()?.json().await?;
    let conv = conv["id"].as_str().unwrap_or_default().to_string();
    let body = json!({"query": format!("load test conversation {n}: what is 1+1?"),
        "mode": plan.mode, "engine": plan.engine});
    let (r, owner) = send_any(targets, None, |b| {
        http.post(format!("{b}/api/conversations/{conv}/runs"))
            .json(&body)
    })
    .await?;
    let status = r.status();
    let v: Value = r.json().await.unwrap_or_default();
    match v["run_id"].as_str() {
        Some(run) if status == reqwest::StatusCode::ACCEPTED => Ok((conv, run.to_string(), owner)),
        // An instance that died after starting the run, before answering, made send_any
        // retry: the run it started is the conversation's active one.
        _ if v["error"]["code"] == "run_active" => {
            let (r, _) = send_any(targets, None, |b| {
                http.get(format!("{b}/api/conversations/{conv}"))
            })
            .await?;
            let c: Value = r.error_for_status()?.json().await?;
            match c["active_run_id"].as_str() {
                Some(run) => Ok((conv, run.to_string(), owner)),
                None => anyhow::bail!("POST runs → run_active, but {conv} has no active run"),
            }
        }
        _ => anyhow::bail!("POST /api/conversations/{conv}/runs → {status}: {v}"),
    }
}

/// Everything the stream gave, connection by connection.
#[derive(Default)]
struct Received {
    segments: Vec<Vec<Ev>>,
    reconnects: usize,
}

impl Received {
    fn last_id(&self) -> Option<String> {
        self.segments
            .iter()
            .rev()
            .find_map(|s| s.last().map(|e| e.id.clone()))
    }

    fn done(&self) -> bool {
        self.segments
            .last()
            .and_then(|s| s.last())
            .is_some_and(|e| e.name == "done")
    }
}

async fn drive(
    http: &reqwest::Client,
    targets: &Targets,
    plan: &ConvPlan,
    n: usize,
    kills_before: usize,
    out: &mut ConvResult,
) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let (conv, run, owner) = start(http, targets, plan, n).await?;
    out.run_id = Some(run.clone());
    let started = Started {
        http,
        targets,
        plan,
        conv,
        run,
        owner,
    };
    let (got, side) = started.read(t0, out).await?;
    out.reconnects = got.reconnects;
    let takeovers = targets.kills() - kills_before;
    let (expect, notes) = started.expect(side, takeovers, out).await?;
    started
        .check(&got.segments, expect, takeovers, &notes, out)
        .await
}

/// A started run and what each stage of following it needs.
struct Started<'a> {
    http: &'a reqwest::Client,
    targets: &'a Targets,
    plan: &'a ConvPlan,
    conv: String,
    run: String,
    /// The instance the run was started on.
    owner: String,
}

impl Started<'_> {
    /// Follows the run's stream to `done`, resuming it on another instance each time it breaks;
    /// the side actions start with the first step or answer event.
    async fn read(
        &self,
        t0: Instant,
        out: &mut ConvResult,
    ) -> anyhow::Result<(Received, Option<tokio::task::JoinHandle<Side>>)> {
        let (run, targets, plan) = (&self.run, self.targets, self.plan);
        let mut got = Received::default();
        let mut side: Option<tokio::task::JoinHandle<Side>> = None;
        let mut at = targets.pick(Some(&self.owner)).to_string();
        while !got.done() {
            if !got.segments.is_empty() {
                got.reconnects += 1;
                at = targets.pick(Some(&at)).to_string();
            }
            let mut on_event = |ev: &Ev| {
                let due = plan.interrupt || plan.cancel;
                if side.is_none() && due && (ev.name == "step" || ev.name == "answer") {
                    side = Some(tokio::spawn(crate::side::actions(
                        self.http.clone(),
                        targets.urls.clone(),
                        run.clone(),
                        self.conv.clone(),
                        plan.interrupt,
                        plan.cancel,
                    )));
                }
            };
            let last = got.last_id();
            let from = Instant::now();
            let mut conn = Conn::default();
            let broke = follow(self.http, &at, run, last, t0, out, &mut conn, &mut on_event).await;
            got.segments.push(conn.events);
            if let Err(e) = broke {
                // Only a kill of that instance may end a stream early (docs/deployment.md: every instance
                // follows every run live until `done`).
                let until = Instant::now() + Duration::from_millis(500);
                if conn.opened && !targets.killed_within(&at, from, until) {
                    out.errors.push(format!(
                        "run {run}: {e:#}, though that instance was not killed"
                    ));
                }
                if got.reconnects >= 200 {
                    return Err(e.context(format!("run {run}: 200 reconnects")));
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        Ok((got, side))
    }

    /// What the joined stream must show, given what the side actions had accepted; and notes on
    /// where things were sent, for a failure report.
    async fn expect(
        &self,
        side: Option<tokio::task::JoinHandle<Side>>,
        takeovers: usize,
        out: &mut ConvResult,
    ) -> anyhow::Result<(Expect, Vec<String>)> {
        let mut expect = Expect {
            statuses: vec!["completed"],
            restart_failure_ok: takeovers > 0,
            ..Expect::default()
        };
        expect.statuses.extend(self.plan.also_ok.iter().copied());
        let mut notes = vec![format!("started on {}", self.owner)];
        if let Some(side) = side {
            notes.extend(side.await?.accepted(out, &mut expect));
        }
        Ok((expect, notes))
    }

    /// Verifies the joined stream and compares it with a full replay; the violations go to `out`.
    async fn check(
        &self,
        segments: &[Vec<Ev>],
        mut expect: Expect,
        takeovers: usize,
        notes: &[String],
        out: &mut ConvResult,
    ) -> anyhow::Result<()> {
        let (http, targets, run) = (self.http, self.targets, &self.run);
        let (seen, mut errs) = takeover::join(segments);
        out.interrupts_moved =
            crate::side::moved(http, targets, &self.conv, &seen, &mut expect).await;
        out.resumed = seen.iter().filter(|e| takeover::is_resumed(e)).count();
        errs.extend(verify_with(&seen, &expect, takeovers));
        let replay = replay(http, targets, run).await?;
        errs.extend(takeover::compare(&seen, &replay, takeovers));
        if !errs.is_empty() {
            errs.push(format!(
                "{}; the stream as joined: {}",
                notes.join(", "),
                outline(&seen)
            ));
        }
        out.errors
            .extend(errs.into_iter().map(|e| format!("run {run}: {e}")));
        Ok(())
    }
}

/// `id:name[:type|status]` of each event, for a failure report.
fn outline(events: &[Ev]) -> String {
    let label = |e: &Ev| {
        let kind = e.data["type"].as_str().or(e.data["status"].as_str());
        kind.map_or(format!("{}:{}", e.id, e.name), |k| {
            format!("{}:{}:{k}", e.id, e.name)
        })
    };
    events.iter().map(label).collect::<Vec<_>>().join(" ")
}

/// One connection of a stream: what it gave, and whether the server answered at all.
#[derive(Default)]
pub struct Conn {
    pub events: Vec<Ev>,
    pub opened: bool,
}

/// Reads one connection of the run's stream from `base` into `seg` until it ends; `Err` when it
/// broke (or would not open) before `done`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn follow(
    http: &reqwest::Client,
    base: &str,
    run: &str,
    last_id: Option<String>,
    t0: Instant,
    out: &mut ConvResult,
    conn: &mut Conn,
    on_event: &mut (dyn FnMut(&Ev) + Send),
) -> anyhow::Result<()> {
    let mut req = http.get(format!("{base}/api/runs/{run}/events"));
    if let Some(id) = &last_id {
        req = req.header("last-event-id", id.as_str());
    }
    let resp = req.send().await?;
    conn.opened = true;
    if resp.status() != reqwest::StatusCode::OK {
        anyhow::bail!("GET {base}/api/runs/{run}/events → {}", resp.status());
    }
    let mut stream = resp.bytes_stream().eventsource();
    while let Some(item) = stream.next().await {
        let ev = item.map_err(|e| anyhow::anyhow!("SSE error from {base}: {e}"))?;
        let now_ms = t0.elapsed().as_secs_f64() * 1e3;
        let data: Value = serde_json::from_str(&ev.data)
            .map_err(|e| anyhow::anyhow!("event {} data is not JSON: {e}", ev.id))?;
        if out.ttfe_ms.is_none() {
            out.ttfe_ms = Some(now_ms);
        }
        match ev.event.as_str() {
            "answer" if data["status"] == "delta" => {
                let now = unix_micros();
                for stamp in token_stamps(data["content"].as_str().unwrap_or_default()) {
                    out.tokens.push((stamp, (now as f64 - stamp as f64) / 1e3));
                }
            }
            "step" if data["type"] == "tool_end" => out.tool_end_ms.push(now_ms),
            "step" if data["type"] == "resumed" => out.resumed_at_ms.push(now_ms),
            "done" => {
                out.run_ms = Some(now_ms);
                out.status = data["status"].as_str().map(str::to_string);
            }
            _ => {}
        }
        let done = ev.event == "done";
        let ev = Ev {
            id: ev.id,
            name: ev.event,
            data,
        };
        on_event(&ev);
        conn.events.push(ev);
        if done {
            return Ok(());
        }
    }
    anyhow::bail!("the stream from {base} ended before done")
}

/// The run's whole stream after its end, from a random instance.
async fn replay(http: &reqwest::Client, targets: &Targets, run: &str) -> anyhow::Result<Vec<Ev>> {
    let mut out = ConvResult::default();
    for _ in 0..5 {
        let mut conn = Conn::default();
        let at = targets.pick(None).to_string();
        let mut ignore = |_: &Ev| {};
        let read = follow(
            http,
            &at,
            run,
            None,
            Instant::now(),
            &mut out,
            &mut conn,
            &mut ignore,
        );
        if read.await.is_ok() {
            return Ok(conn.events);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    anyhow::bail!("run {run}: no complete replay from any instance")
}

#[cfg(test)]
mod tests;
