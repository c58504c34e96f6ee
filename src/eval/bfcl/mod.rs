//! `reagent eval --bfcl CATEGORIES`: the Berkeley Function Calling Leaderboard's own entries
//! and checkers (evals/README.md, "BFCL") run through reagent. The bridge (`bridge`) loads the
//! entries and scores each run's calls with BFCL's AST or multi-turn checker; `entry` runs one
//! entry against the service, the function docs offered as caller tools.

pub mod bridge;
pub mod entry;

use std::path::PathBuf;

use futures::StreamExt;
use serde_json::json;

use super::client::Target;
use super::report::TaskResult;
use super::Progress;
use bridge::Bridge;
use entry::Entry;

/// The BFCL categories the bridge knows (the first four single-turn, the last multi-turn).
pub const CATEGORIES: [&str; 5] = [
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "multi_turn_base",
];

/// What `--bfcl`, `--bfcl-limit` and `--bfcl-python` asked for.
#[derive(Clone, Debug)]
pub struct Options {
    pub categories: Vec<String>,
    /// The first N entries of each category (all when `None`).
    pub limit: Option<usize>,
    /// The Python that has `bfcl-eval`.
    pub python: PathBuf,
}

/// The bridge, running, with the entries it loaded and the folder it runs in.
pub struct Loaded {
    pub bridge: Bridge,
    pub entries: Vec<Entry>,
    dir: PathBuf,
}

impl Loaded {
    /// Checks the categories, starts the bridge and loads the entries: every failure here is
    /// the eval's usage error (a missing Python or `bfcl-eval` says how to install it).
    pub async fn start(opts: &Options) -> Result<Loaded, String> {
        if let Some(c) = opts
            .categories
            .iter()
            .find(|c| !CATEGORIES.contains(&c.as_str()))
        {
            return Err(format!(
                "--bfcl {c}: expected some of {}",
                CATEGORIES.join(", ")
            ));
        }
        if !opts.python.exists() {
            return Err(format!(
                "--bfcl-python {}: not found; `scripts/bfcl.sh setup` installs bfcl-eval there \
                 (evals/README.md)",
                opts.python.display()
            ));
        }
        let dir = std::env::temp_dir().join(format!("reagent-bfcl-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let bridge = Bridge::start(&opts.python, &dir)
            .await
            .map_err(|e| format!("{e:#}"))?;
        let limit = opts.limit.unwrap_or(usize::MAX);
        let request = json!({ "op": "load", "categories": opts.categories, "limit": limit });
        let loaded = bridge.call(&request).await?;
        let entries: Vec<Entry> = serde_json::from_value(loaded["entries"].clone())
            .map_err(|e| format!("the BFCL bridge's entries: {e}"))?;
        if entries.is_empty() {
            return Err("the BFCL categories hold no entry".into());
        }
        Ok(Loaded {
            bridge,
            entries,
            dir,
        })
    }

    /// Runs every entry, `concurrency` at a time, and scores each with BFCL's checker.
    pub async fn run_all(&self, target: &Target, concurrency: usize) -> Vec<TaskResult> {
        let http = reqwest::Client::new();
        let progress = Progress::new(self.entries.len());
        let mut results: Vec<(usize, TaskResult)> =
            futures::stream::iter(self.entries.iter().enumerate())
                .map(|(i, e)| {
                    let (http, progress) = (&http, &progress);
                    async move {
                        let result = self.judge(http, target, e).await;
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

    async fn judge(&self, http: &reqwest::Client, target: &Target, e: &Entry) -> TaskResult {
        let mut result = TaskResult::failed(&e.id, String::new());
        result.category = Some(e.category.clone());
        let ran = match entry::run(http, target, &self.bridge, e).await {
            Ok(ran) => ran,
            Err(error) => {
                result.error = Some(error);
                return result;
            }
        };
        let request = json!({ "op": "score", "id": e.id, "turns": ran.turns });
        match self.bridge.call(&request).await {
            Ok(verdict) => {
                result.correct = verdict["valid"] == true;
                result.checker = verdict["reason"].as_str().map(str::to_string);
            }
            Err(error) => result.error = Some(error),
        }
        result.status = ran.status;
        result.llm_calls = ran.llm_calls;
        result.tool_calls = ran.tool_calls;
        result.tokens = ran.tokens;
        result.time_s = ran.elapsed.as_secs_f64();
        result.answer = entry::calls_text(&ran.turns);
        result
    }

    /// Removes the bridge's folder (the bridge itself stops when dropped).
    pub fn stop(self) {
        drop(self.bridge);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests;
