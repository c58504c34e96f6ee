//! One conversation through the public API: `POST /api/chat` with `Accept: text/event-stream`,
//! optionally an interrupt and a cancel sent from the side while the stream is read, then the
//! stream verified ([`crate::verify`]) and its timings kept.

use std::time::Instant;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use reagent_mock::{token_stamps, unix_micros};
use serde_json::{json, Value};

use crate::event::Ev;
use crate::plan::{ConvPlan, ConvResult, Side};
use crate::verify::{verify, Expect};

pub async fn run(http: &reqwest::Client, base: &str, plan: &ConvPlan, n: usize) -> ConvResult {
    if let Some(targets) = &plan.targets {
        return crate::multi::run(http, targets, plan, n).await;
    }
    let mut result = ConvResult::default();
    match tokio::time::timeout(plan.timeout, drive(http, base, plan, n, &mut result)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => result.errors.push(format!("{e:#}")),
        Err(_) => result
            .errors
            .push(format!("no done within {:?}", plan.timeout)),
    }
    result
}

async fn drive(
    http: &reqwest::Client,
    base: &str,
    plan: &ConvPlan,
    n: usize,
    out: &mut ConvResult,
) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let resp = open(http, base, plan, n).await?;
    let mut stream = resp.bytes_stream().eventsource();
    let mut events = Vec::new();
    let mut conversation_id = None;
    let mut side: Option<tokio::task::JoinHandle<Side>> = None;
    while let Some(item) = stream.next().await {
        let ev = item.map_err(|e| anyhow::anyhow!("SSE error: {e}"))?;
        let now_ms = t0.elapsed().as_secs_f64() * 1e3;
        let data: Value = serde_json::from_str(&ev.data)
            .map_err(|e| anyhow::anyhow!("event {} data is not JSON: {e}", ev.id))?;
        if events.is_empty() {
            out.ttfe_ms = Some(now_ms);
        }
        record(out, &mut conversation_id, &ev.event, &data, now_ms);
        let trigger = matches!(ev.event.as_str(), "step" | "answer");
        if side.is_none() && trigger && (plan.interrupt || plan.cancel) {
            if let (Some(run), Some(conv)) = (&out.run_id, &conversation_id) {
                side = Some(tokio::spawn(side_actions(
                    http.clone(),
                    base.to_string(),
                    run.clone(),
                    conv.clone(),
                    plan.interrupt,
                    plan.cancel,
                )));
            }
        }
        events.push(Ev {
            id: ev.id,
            name: ev.event,
            data,
        });
    }
    let expect = expect(plan, side, out).await?;
    out.interrupts_moved = crate::side::handed_on(&events, &expect);
    let run = out.run_id.clone().unwrap_or_else(|| "?".into());
    out.errors.extend(
        verify(&events, &expect)
            .into_iter()
            .map(|e| format!("run {run}: {e}")),
    );
    Ok(())
}

/// `POST /api/chat` for conversation `n`, its stream asked for; `Err` unless the server says 200.
async fn open(
    http: &reqwest::Client,
    base: &str,
    plan: &ConvPlan,
    n: usize,
) -> anyhow::Result<reqwest::Response> {
    let resp = http
        .post(format!("{base}/api/chat"))
        .header("accept", "text/event-stream")
        .json(&json!({"query": format!("load test conversation {n}: what is 1+1?"), "mode": plan.mode, "engine": plan.engine, "agent": plan.agent}))
        .send()
        .await?;
    if resp.status() != reqwest::StatusCode::OK {
        let status = resp.status();
        let body = resp.text().await.unwrap_or_default();
        anyhow::bail!("POST /api/chat → {status}: {body}");
    }
    Ok(resp)
}

/// Keeps what event `name` tells of the run: its ids, answer tokens, tool ends and end.
fn record(
    out: &mut ConvResult,
    conversation_id: &mut Option<String>,
    name: &str,
    data: &Value,
    now_ms: f64,
) {
    match name {
        "start" => {
            out.run_id = data["run_id"].as_str().map(str::to_string);
            *conversation_id = data["conversation_id"].as_str().map(str::to_string);
        }
        "answer" if data["status"] == "delta" => {
            out.first_delta_ms.get_or_insert(now_ms);
            let now = unix_micros();
            for stamp in token_stamps(data["content"].as_str().unwrap_or_default()) {
                out.tokens.push((stamp, (now as f64 - stamp as f64) / 1e3));
            }
        }
        "step" if data["type"] == "tool_end" => out.tool_end_ms.push(now_ms),
        "done" => {
            out.run_ms = Some(now_ms);
            out.status = data["status"].as_str().map(str::to_string);
            out.llm_calls = data["usage"]["llm_calls"].as_u64();
            out.completion_tokens = data["usage"]["completion_tokens"].as_u64();
            out.synthesis = data["synthesis"].as_bool();
        }
        _ => {}
    }
}

/// What the run's stream must show, given what the side actions had accepted.
async fn expect(
    plan: &ConvPlan,
    side: Option<tokio::task::JoinHandle<Side>>,
    out: &mut ConvResult,
) -> anyhow::Result<Expect> {
    let mut expect = Expect {
        statuses: vec!["completed"],
        ..Expect::default()
    };
    expect.statuses.extend(plan.also_ok.iter().copied());
    if let Some(side) = side {
        side.await?.accepted(out, &mut expect);
    }
    Ok(expect)
}

/// Interrupt, then cancel, as a second client would; 409 (run already over) is fine.
async fn side_actions(
    http: reqwest::Client,
    base: String,
    run: String,
    conv: String,
    interrupt: bool,
    cancel: bool,
) -> Side {
    let mut side = Side::default();
    if interrupt {
        let r = http
            .post(format!("{base}/api/conversations/{conv}/interrupt"))
            .json(&json!({"content": "also, please double-check"}))
            .send()
            .await;
        match r {
            Ok(r) if r.status() == reqwest::StatusCode::ACCEPTED => match r.json::<Value>().await {
                Ok(v) => match v["id"].as_str() {
                    Some(id) if v["next_run"] == true => side.next_run.push(id.to_string()),
                    Some(id) => side.interrupts.push(id.to_string()),
                    None => side
                        .errors
                        .push(format!("run {run}: interrupt 202 without id: {v}")),
                },
                Err(e) => side.errors.push(format!("run {run}: interrupt reply: {e}")),
            },
            Ok(r) if r.status() == reqwest::StatusCode::CONFLICT => {}
            Ok(r) => side
                .errors
                .push(format!("run {run}: interrupt → {}", r.status())),
            Err(e) => side.errors.push(format!("run {run}: interrupt: {e}")),
        }
    }
    if cancel {
        let r = http
            .post(format!("{base}/api/runs/{run}/cancel"))
            .send()
            .await;
        match r {
            Ok(r) if r.status() == reqwest::StatusCode::ACCEPTED => side.cancel_accepted = true,
            Ok(r) if r.status() == reqwest::StatusCode::CONFLICT => {}
            Ok(r) => side
                .errors
                .push(format!("run {run}: cancel → {}", r.status())),
            Err(e) => side.errors.push(format!("run {run}: cancel: {e}")),
        }
    }
    side
}
