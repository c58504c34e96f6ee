//! One BFCL entry through reagent's own API: each turn is a query in one conversation, BFCL's
//! function docs are the run's caller tools (`client_tools`, docs/api.md "Caller tools"), so a
//! reply that calls them ends the run `requires_action` with the calls as they were made. A
//! single-turn entry is scored on its first reply; in a multi-turn entry the bridge executes the
//! calls on BFCL's backends and the outputs continue the run, until the model answers.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{json, Value as Json};

use super::bridge::Bridge;
use crate::eval::client::{self, Outcome, Target};

/// An entry as the bridge's `load` gives it.
#[derive(Clone, Debug, Deserialize)]
pub struct Entry {
    pub id: String,
    pub category: String,
    pub multi_turn: bool,
    /// Each turn's query.
    pub turns: Vec<String>,
    /// BFCL's function docs as OpenAI function tools (BFCL's own conversion).
    pub tools: Vec<Json>,
}

/// What the entry's runs did: per turn, per reply, `{"calls": […]}` or `{"text": …}` (the
/// shape the bridge's `score` takes), with the runs' counters added up.
#[derive(Debug, Default)]
pub struct Ran {
    pub turns: Vec<Vec<Json>>,
    /// The last run's status.
    pub status: String,
    pub llm_calls: u64,
    pub tool_calls: u64,
    pub tokens: u64,
    pub elapsed: Duration,
}

impl Ran {
    /// Counts a turn's last run (a continuation's counters include the runs it goes on from)
    /// and the calls of its replies (caller-tool calls are not in the runs' `tool_calls`).
    fn count(&mut self, last: &Outcome, replies: &[Json]) {
        self.status.clone_from(&last.status);
        self.llm_calls += last.llm_calls;
        self.tokens += last.tokens;
        let calls = replies.iter().filter_map(|r| r["calls"].as_array());
        self.tool_calls += calls.map(|c| c.len() as u64).sum::<u64>();
    }
}

/// Runs `entry`'s turns; an error when the service refused a request, a stream broke off or
/// the bridge could not execute the calls.
pub async fn run(
    http: &reqwest::Client,
    target: &Target,
    bridge: &Bridge,
    entry: &Entry,
) -> Result<Ran, String> {
    let started = Instant::now();
    let mut ran = Ran::default();
    let mut conversation: Option<String> = None;
    for query in &entry.turns {
        let mut body = client::chat_body(target, query);
        body["client_tools"] = json!(entry.tools);
        if let Some(id) = &conversation {
            body["conversation_id"] = json!(id);
        }
        let mut outcome = client::post(http, target, "/api/chat", body).await?;
        conversation = outcome.conversation_id.clone().or(conversation);
        let mut replies = Vec::new();
        loop {
            if outcome.status != "requires_action" {
                replies.push(json!({ "text": outcome.answer }));
                break;
            }
            let calls = std::mem::take(&mut outcome.required_action);
            replies.push(json!({ "calls": calls }));
            if !entry.multi_turn {
                break;
            }
            let outputs = execute(bridge, &entry.id, &calls).await?;
            let run_id = outcome.run_id.as_deref().ok_or("a run without an id")?;
            let path = format!("/api/runs/{run_id}/tool_outputs");
            outcome = client::post(http, target, &path, json!({ "outputs": outputs })).await?;
        }
        ran.count(&outcome, &replies);
        ran.turns.push(replies);
        if !entry.multi_turn {
            break;
        }
    }
    ran.elapsed = started.elapsed();
    Ok(ran)
}

/// The calls' outputs from BFCL's backends, as `tool_outputs` takes them.
async fn execute(bridge: &Bridge, id: &str, calls: &[Json]) -> Result<Vec<Json>, String> {
    let answer = bridge
        .call(&json!({ "op": "execute", "id": id, "calls": calls }))
        .await?;
    let outputs = answer["outputs"].as_array().cloned().unwrap_or_default();
    if outputs.len() != calls.len() {
        return Err(format!(
            "the BFCL bridge executed {} calls and returned {} outputs",
            calls.len(),
            outputs.len()
        ));
    }
    Ok(calls
        .iter()
        .zip(outputs)
        .map(|(call, output)| {
            let output = match output {
                Json::String(s) => s,
                other => other.to_string(),
            };
            json!({ "call_id": call["call_id"], "output": output })
        })
        .collect())
}

/// The entry's calls on one line, for the report: `name(args)`, replies by `; `, turns by ` | `.
pub fn calls_text(turns: &[Vec<Json>]) -> String {
    turns
        .iter()
        .map(|replies| {
            replies
                .iter()
                .map(|r| match r["calls"].as_array() {
                    Some(calls) => calls
                        .iter()
                        .map(|c| {
                            let name = c["name"].as_str().unwrap_or_default();
                            let args = c["arguments"].as_str().unwrap_or_default();
                            format!("{name}({args})")
                        })
                        .collect::<Vec<_>>()
                        .join(" "),
                    None => format!("{:?}", r["text"].as_str().unwrap_or_default()),
                })
                .collect::<Vec<_>>()
                .join("; ")
        })
        .collect::<Vec<_>>()
        .join(" | ")
}
