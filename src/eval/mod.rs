//! `reagent eval` (README "Checking a model with reagent eval", evals/README.md): runs an agent
//! over a JSONL file of tasks, against a running service (`--url`) or one built in-process from
//! a configuration (`--config`), and says per task whether the answer was correct, with the
//! run's LLM calls, tool calls, tokens and time, then the accuracy and medians — as a table or
//! as JSON. `--min-accuracy` turns it into a check for CI.
//!
//! With `--bfcl CATEGORIES` the tasks are the Berkeley Function Calling Leaderboard's own
//! entries, scored by its own checkers (`bfcl`).
//!
//! Files: `task` (the task file and how an answer is judged), `client` (one task over HTTP),
//! `local` (the in-process service), `report` (results, summary, table), `bfcl` (BFCL).

pub mod bfcl;
pub mod client;
pub mod local;
pub mod report;
pub mod task;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use futures::StreamExt;

use crate::domain::Sampling;
use client::{Outcome, Target};
use report::{Report, Summary, TaskResult};
use task::Task;

/// The flags of `reagent eval`.
#[derive(Args, Debug)]
pub struct EvalArgs {
    /// The JSONL task file: one `{id, query, expect, tools_required?}` per line.
    #[arg(required_unless_present = "bfcl")]
    pub tasks: Option<PathBuf>,
    /// BFCL categories to run instead of a task file (comma-separated): simple_python,
    /// multiple, parallel, parallel_multiple, multi_turn_base.
    #[arg(long, value_delimiter = ',', conflicts_with = "tasks")]
    pub bfcl: Vec<String>,
    /// The first N entries of each BFCL category (default: all).
    #[arg(long, requires = "bfcl", value_parser = clap::value_parser!(u64).range(1..))]
    pub bfcl_limit: Option<u64>,
    /// The Python with `bfcl-eval` (default: ~/.cache/reagent-bfcl/venv/bin/python, where
    /// `scripts/bfcl.sh setup` installs it).
    #[arg(long, requires = "bfcl")]
    pub bfcl_python: Option<PathBuf>,
    /// A running reagent service (its base URL, e.g. http://127.0.0.1:8080); without it the
    /// service is built in-process from the configuration.
    #[arg(long, conflicts_with = "config")]
    pub url: Option<String>,
    /// The bearer key for --url, when the service has API keys.
    #[arg(long, requires = "url")]
    pub api_key: Option<String>,
    /// The configuration of the in-process service (default: as `serve`, REAGENT_CONFIG or
    /// ./config.toml, then the environment).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The agent every task runs with (an `[[agents]]` name).
    #[arg(long)]
    pub agent: Option<String>,
    /// The model every task runs on (a `[[models]]` name).
    #[arg(long)]
    pub model: Option<String>,
    /// `native`, `json` or `auto` (the server's default when absent).
    #[arg(long, value_parser = ["native", "json", "auto"])]
    pub mode: Option<String>,
    /// Tasks run at the same time.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: u16,
    /// Sampling temperature for every request of the eval (in-process only).
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Nucleus sampling for every request of the eval (in-process only).
    #[arg(long)]
    pub top_p: Option<f32>,
    /// Sampling seed for every request of the eval (in-process only).
    #[arg(long)]
    pub seed: Option<u64>,
    /// The longest one task may take, in seconds; its run is then cancelled.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_s: u64,
    /// Print the results as JSON (`{summary, tasks}`) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Exit with status 1 when the accuracy (0 to 1) is below this.
    #[arg(long)]
    pub min_accuracy: Option<f64>,
}

/// Why `reagent eval` did not produce a verdict.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// Bad flags, task file or configuration (exit status 2).
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Run(#[from] anyhow::Error),
}

/// Runs the eval and prints its results on stdout (progress on stderr); `Ok(false)` when the
/// accuracy is below `--min-accuracy`.
pub async fn run(args: EvalArgs) -> Result<bool, EvalError> {
    let sampling = Sampling {
        temperature: args.temperature,
        top_p: args.top_p,
        seed: args.seed,
    };
    check_flags(&args, &sampling)?;
    let work = match &args.tasks {
        Some(path) => Work::Tasks(read_tasks(path)?),
        None => {
            let loaded = bfcl::Loaded::start(&bfcl_options(&args)).await;
            Work::Bfcl(Box::new(loaded.map_err(EvalError::Usage)?))
        }
    };

    let local = match &args.url {
        Some(_) => None,
        None => {
            let mut config = local::load(args.config.as_deref())
                .map_err(|e| EvalError::Usage(format!("configuration error: {e}")))?;
            local::fix_sampling(&mut config, sampling);
            Some(local::Local::start(config).await?)
        }
    };
    let base = match (&args.url, &local) {
        (Some(url), _) => url.trim_end_matches('/').to_string(),
        (None, Some(l)) => l.base.clone(),
        (None, None) => unreachable!("an in-process service is started without --url"),
    };
    let target = Target {
        base,
        api_key: args.api_key.clone(),
        agent: args.agent.clone(),
        model: args.model.clone(),
        mode: args.mode.clone(),
        timeout: Duration::from_secs(args.timeout_s),
    };
    let started = Instant::now();
    let (results, summary) = match work {
        Work::Tasks(tasks) => {
            let results = run_all(&tasks, &target, args.concurrency.into()).await;
            let summary = Summary::of_tasks(&results, started.elapsed());
            (results, summary)
        }
        Work::Bfcl(loaded) => {
            let results = loaded.run_all(&target, args.concurrency.into()).await;
            loaded.stop();
            let summary = Summary::of(&results, started.elapsed());
            (results, summary)
        }
    };
    if let Some(l) = local {
        l.stop().await;
    }
    print_results(&results, &summary, args.json)?;
    match args.min_accuracy {
        Some(min) if summary.accuracy < min => {
            eprintln!(
                "reagent: eval: accuracy {:.3} is below --min-accuracy {min}",
                summary.accuracy
            );
            Ok(false)
        }
        _ => Ok(true),
    }
}

/// The flags' values and combinations that cannot run (exit status 2).
fn check_flags(args: &EvalArgs, sampling: &Sampling) -> Result<(), EvalError> {
    if let Some((field, value, expected)) = sampling.invalid() {
        return Err(EvalError::Usage(format!("--{field} {value}: {expected}")));
    }
    if let Some(min) = args.min_accuracy.filter(|m| !(0.0..=1.0).contains(m)) {
        return Err(EvalError::Usage(format!(
            "--min-accuracy {min}: expected a number from 0 to 1"
        )));
    }
    if args.url.is_some() && !sampling.is_empty() {
        return Err(EvalError::Usage(
            "--temperature, --top-p and --seed apply to the in-process service only: a running \
             service samples as its configuration says; set temperature, top_p and seed on an \
             [[agents]] entry (or its model) there and pass --agent"
                .into(),
        ));
    }
    Ok(())
}

/// What the eval runs: a task file's tasks or BFCL's entries.
enum Work {
    Tasks(Vec<Task>),
    Bfcl(Box<bfcl::Loaded>),
}

fn read_tasks(path: &std::path::Path) -> Result<Vec<Task>, EvalError> {
    let text =
        task::read_tasks(path).map_err(|e| EvalError::Usage(format!("{}: {e}", path.display())))?;
    task::parse_tasks(&text).map_err(|e| EvalError::Usage(format!("{}: {e}", path.display())))
}

fn bfcl_options(args: &EvalArgs) -> bfcl::Options {
    bfcl::Options {
        categories: args.bfcl.clone(),
        limit: args.bfcl_limit.and_then(|n| usize::try_from(n).ok()),
        python: args
            .bfcl_python
            .clone()
            .unwrap_or_else(bfcl::bridge::default_python),
    }
}

/// Every task, `concurrency` at a time, in the file's order.
async fn run_all(tasks: &[Task], target: &Target, concurrency: usize) -> Vec<TaskResult> {
    let http = reqwest::Client::new();
    let progress = Progress::new(tasks.len());
    let mut results: Vec<(usize, TaskResult)> = futures::stream::iter(tasks.iter().enumerate())
        .map(|(i, task)| {
            let (http, progress) = (&http, &progress);
            async move {
                let outcome = client::run(http, target, &task.query).await;
                let result = judge(task, outcome);
                progress.finished(&result);
                (i, result)
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    progress.clear();
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// A task's result from what its run did.
fn judge(task: &Task, outcome: Result<Outcome, String>) -> TaskResult {
    match outcome {
        Ok(o) => {
            let missing_tools: Vec<String> = task
                .tools_required
                .iter()
                .filter(|t| !o.tools_ok.contains(t))
                .cloned()
                .collect();
            TaskResult {
                id: task.id.clone(),
                correct: missing_tools.is_empty() && task.expect.matches(&o.answer),
                status: o.status,
                llm_calls: o.llm_calls,
                tool_calls: o.tool_calls,
                tokens: o.tokens,
                time_s: o.elapsed.as_secs_f64(),
                missing_tools,
                first_result_correct: o.first_result.as_deref().map(|r| task.expect.matches(r)),
                first_call: o.first_call,
                answer: o.answer,
                error: None,
                category: None,
                checker: None,
            }
        }
        Err(e) => TaskResult::failed(&task.id, e),
    }
}

fn print_results(results: &[TaskResult], summary: &Summary, json: bool) -> anyhow::Result<()> {
    let text = if json {
        let report = Report {
            summary,
            tasks: results,
        };
        serde_json::to_string_pretty(&report)? + "\n"
    } else {
        report::table(results, summary)
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("cannot write the results")
}

/// The progress line on stderr: rewritten in place on a terminal, one line per task otherwise
/// (CI logs).
struct Progress {
    total: usize,
    done: AtomicUsize,
    correct: AtomicUsize,
    terminal: bool,
}

impl Progress {
    fn new(total: usize) -> Self {
        Self {
            total,
            done: AtomicUsize::new(0),
            correct: AtomicUsize::new(0),
            terminal: std::io::stderr().is_terminal(),
        }
    }

    fn finished(&self, r: &TaskResult) {
        let done = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        let correct = self
            .correct
            .fetch_add(usize::from(r.correct), Ordering::SeqCst)
            + usize::from(r.correct);
        let verdict = if r.correct { "correct" } else { "wrong" };
        let line = format!(
            "eval [{done}/{}] {correct} correct; {} {verdict} in {:.1} s",
            self.total,
            report::printable(&r.id),
            r.time_s
        );
        match self.terminal {
            true => eprint!("\r\x1b[2K{line}"),
            false => eprintln!("{line}"),
        }
    }

    fn clear(&self) {
        if self.terminal {
            eprint!("\r\x1b[2K");
        }
    }
}
