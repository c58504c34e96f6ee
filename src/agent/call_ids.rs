//! Tool-call ids unique within a run (docs/api.md). Providers leave ids empty, repeat
//! them within one response, or reuse them in later iterations (after a follow-up, a cycle
//! warning or a checklist); the UI and the trace key each call by its id, and each tool result
//! must answer exactly one call, so a repeat is renamed `<id>_2`, `<id>_3`…

use std::collections::HashSet;

use crate::llm::ToolCall;

/// The ids a run has used so far.
#[derive(Debug, Default)]
pub struct CallIds {
    used: HashSet<String>,
}

impl CallIds {
    /// Gives every call of one response its run-unique id: an empty id becomes
    /// `call_<iteration>_<n>`, an id already used in the run (or earlier in this response)
    /// gets the first free `_2`, `_3`… suffix that no other call of the response carries.
    pub fn assign(&mut self, iteration: u32, calls: &mut [ToolCall]) {
        for (n, c) in calls.iter_mut().enumerate() {
            if c.id.is_empty() {
                c.id = format!("call_{iteration}_{}", n + 1);
            }
        }
        for i in 0..calls.len() {
            if self.used.contains(&calls[i].id) {
                let base = calls[i].id.clone();
                let free =
                    |id: &String| !self.used.contains(id) && !calls.iter().any(|c| &c.id == id);
                let mut n = 2;
                while !free(&format!("{base}_{n}")) {
                    n += 1;
                }
                calls[i].id = format!("{base}_{n}");
            }
            self.used.insert(calls[i].id.clone());
        }
    }

    /// One run-unique id for a call that came without one (JSON mode).
    pub fn next(&mut self, iteration: u32) -> String {
        let mut call = [ToolCall {
            id: String::new(),
            name: String::new(),
            arguments: String::new(),
        }];
        self.assign(iteration, &mut call);
        std::mem::take(&mut call[0].id)
    }
}

#[cfg(test)]
mod tests;
