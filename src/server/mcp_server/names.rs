//! The agents' tool names. Clients take only `[A-Za-z0-9_-]` (at most 64) in a tool name, while
//! agent names may also hold `.` and `:`, which become `_`; so `plan.ner`, `plan:ner` and
//! `plan_ner` would all be `plan_ner`. Names must be unique in a list: an agent whose name is
//! already a tool name keeps it, and each other agent of a clash gets a suffix from a hash of
//! its own name, the same on every call and instance and in any listing order (an agent named
//! `plan_ner` made later takes that name over from `plan.ner`, which then gets its suffix).

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::config::AgentSpec;

const MAX: usize = 64;

/// The tool name of each of `agents`, in their order, unique among them.
pub fn tool_names(agents: &[Arc<AgentSpec>]) -> Vec<String> {
    let plain: Vec<String> = agents
        .iter()
        .map(|a| a.name.replace(['.', ':'], "_"))
        .collect();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for name in &plain {
        *count.entry(name).or_default() += 1;
    }
    let mut names: Vec<String> = agents
        .iter()
        .zip(&plain)
        .map(|(agent, name)| {
            if count[name.as_str()] > 1 && *name != agent.name {
                suffixed(name, &agent.name)
            } else {
                name.clone()
            }
        })
        .collect();
    // A suffixed name that happens to be another agent's own: the later one goes unlisted
    // (empty names are skipped by the callers) rather than two tools sharing a name.
    let mut seen = std::collections::HashSet::new();
    for name in &mut names {
        if !seen.insert(name.clone()) {
            tracing::warn!(tool = %name, "two agents map to this MCP tool name: one is left out");
            name.clear();
        }
    }
    names
}

/// `name` with `_` and four hex digits of `agent`'s hash, cut to fit 64 characters.
fn suffixed(name: &str, agent: &str) -> String {
    let digest = Sha256::digest(agent.as_bytes());
    let mut suffix = String::from("_");
    for byte in &digest[..2] {
        let _ = write!(suffix, "{byte:02x}");
    }
    let keep = MAX - suffix.len();
    // Agent names are ASCII, so any cut is a character boundary.
    let base = name.get(..keep).unwrap_or(name);
    format!("{base}{suffix}")
}
