//! `facade`: the protocol facades' own cost. The same short run (`--tools` tool calls and an
//! answer of `--tokens` tokens from a zero-latency mock) through `POST /api/chat` and through
//! `POST /v1/chat/completions` and `POST /v1/responses` (streamed), `POST /ag-ui/reagent` and
//! `POST /ai-sdk/reagent` (the implicit `reagent` agent, a new thread each), A2A's
//! `SendStreamingMessage` at `POST /a2a/reagent` (a new task each) and `POST /mcp` (`tools/call`
//! with a progress token), or those `--apis` names, one run at a time, in
//! alternating blocks so that drift on a shared machine hits all alike. Reports per run: wall
//! time from request to the stream's end, runs/s, the server's CPU time, and per streamed step
//! where the protocol streams steps one by one; and how busy the whole machine was meanwhile.
//! Files: `route` (each protocol's request and end).

mod route;
#[cfg(test)]
mod tests;

use crate::procinfo::{cpu_seconds, MachineMeter};
use crate::spawn::MockFlags;
use crate::spawn::Stack;
use crate::stats::Summary;
use route::Route;

/// Runs per block of one kind before switching to the other.
const BLOCK: usize = 20;

/// What `facade` runs.
pub struct Plan {
    pub runs: usize,
    pub warmup: usize,
    pub tokens: usize,
    pub tools: usize,
    /// `--apis` names (all when empty).
    pub apis: Vec<String>,
}

#[derive(Default)]
struct Tally {
    wall_ms: Vec<f64>,
    cpu_s: f64,
    steps: Option<usize>,
}

pub async fn facade(http: &reqwest::Client, plan: Plan) -> anyhow::Result<bool> {
    let routes = route::selected(&plan.apis)?;
    let flags = MockFlags {
        tool_iterations: plan.tools,
        answer_tokens: plan.tokens,
        ..MockFlags::default()
    };
    let stack = Stack::start(http, &flags, &[]).await?;
    let (base, pid) = (stack.server.base.clone(), stack.server.pid);
    let mut n = 0;
    for i in 0..plan.warmup {
        n += 1;
        route::run(http, &base, routes[i % routes.len()].0, n).await?;
    }
    let mut tallies: Vec<Tally> = routes.iter().map(|_| Tally::default()).collect();
    let mut done = 0;
    let mut order: Vec<usize> = (0..routes.len()).collect();
    let machine = MachineMeter::start();
    while done < plan.runs {
        let block = BLOCK.min(plan.runs - done);
        for &i in &order {
            let cpu0 = cpu_seconds(pid).unwrap_or(0.0);
            for _ in 0..block {
                n += 1;
                let t0 = std::time::Instant::now();
                let body = route::run(http, &base, routes[i].0, n).await?;
                let tally = &mut tallies[i];
                tally.wall_ms.push(t0.elapsed().as_secs_f64() * 1000.0);
                if let Some(s) = route::steps(routes[i].0, &body) {
                    *tally.steps.get_or_insert(0) += s;
                }
            }
            tallies[i].cpu_s += cpu_seconds(pid).unwrap_or(cpu0) - cpu0;
        }
        // A B C … then … C B A: the database grows as runs are added, and no API should always
        // run on a smaller one than the others.
        order.reverse();
        done += block;
    }
    let busy = machine.stop();
    stack.stop().await?;
    report(&plan, &routes, &tallies, busy);
    Ok(true)
}

fn report(plan: &Plan, routes: &[(Route, &str)], tallies: &[Tally], busy: f64) {
    println!(
        "== facade: {} runs each, one at a time ({} tool call(s), {}-token answer, mock at 0 ms); \
         machine {busy:.0} % busy on {} cores (this load and anything else)",
        plan.runs,
        plan.tools,
        plan.tokens,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    let rows: Vec<Row> = routes
        .iter()
        .zip(tallies)
        .map(|((_, name), t)| Row::of(name, t))
        .collect();
    for row in &rows {
        row.print();
    }
    let api = &rows[0];
    for row in &rows[1..] {
        println!(
            "  {:<24} cost wall p50 {:+.3} ms ({:+.1} %)   server CPU {:+.3} ms/run ({:+.1} %, {:+.4} ms/token){}",
            row.name,
            row.p50 - api.p50,
            pct(row.p50, api.p50),
            row.cpu_ms - api.cpu_ms,
            pct(row.cpu_ms, api.cpu_ms),
            (row.cpu_ms - api.cpu_ms) / plan.tokens.max(1) as f64,
            match (row.cpu_per_step, api.cpu_per_step) {
                (Some(a), Some(b)) => format!("   per step {:+.1} %", pct(a, b)),
                _ => String::new(),
            }
        );
    }
}

struct Row {
    name: String,
    p50: f64,
    p90: f64,
    mean: f64,
    cpu_ms: f64,
    cpu_per_step: Option<f64>,
}

impl Row {
    fn of(name: &str, t: &Tally) -> Row {
        let s = Summary::of(&t.wall_ms);
        Row {
            name: name.to_string(),
            p50: s.p50,
            p90: s.p90,
            mean: mean(&t.wall_ms),
            cpu_ms: 1000.0 * t.cpu_s / t.wall_ms.len().max(1) as f64,
            cpu_per_step: t
                .steps
                .filter(|s| *s > 0)
                .map(|s| 1000.0 * t.cpu_s / s as f64),
        }
    }

    fn print(&self) {
        let per_step = self
            .cpu_per_step
            .map_or_else(String::new, |ms| format!(", {ms:6.3} ms/step streamed"));
        println!(
            "  {:<24} wall p50 {:7.3}  p90 {:7.3}  mean {:7.3} ms   {:6.1} runs/s   server CPU {:6.3} ms/run{per_step}",
            self.name,
            self.p50,
            self.p90,
            self.mean,
            1000.0 / self.mean.max(1e-9),
            self.cpu_ms,
        );
    }
}

fn pct(a: f64, b: f64) -> f64 {
    100.0 * (a - b) / b.max(1e-9)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}
