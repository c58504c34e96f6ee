//! The DAG ordering rules (a step starts after its dependencies end), on top of [`crate::verify`]'s SSE rules. A run whose
//! `start.engine` is not `dag` must carry no DAG event. A DAG run's rounds are 1, 2, … with a
//! `replan` announcing each after the first; within a round each step goes `queued → running
//! → completed|failed`, or straight to `failed` (cascade) or `skipped`, never past a final
//! status; it runs only after all its dependencies completed; its own events (`dag_step` tag)
//! come only while it runs; the analysis follows the round's last final status; `done` says
//! `engine: dag` and the number of rounds.

use std::collections::HashMap;

use serde_json::Value;

use crate::event::Ev;

/// One step of the current round: its dependencies and its statuses so far.
struct Step {
    deps: Vec<String>,
    statuses: Vec<String>,
}

impl Step {
    fn last(&self) -> Option<&str> {
        self.statuses.last().map(String::as_str)
    }
    fn is_final(&self) -> bool {
        matches!(self.last(), Some("completed" | "failed" | "skipped"))
    }
}

const DAG_TYPES: [&str; 4] = ["plan", "dag_step", "analysis", "replan"];

/// Every DAG-rule violation, in stream order.
pub fn verify_dag(events: &[Ev]) -> Vec<String> {
    let dag = events
        .first()
        .is_some_and(|e| e.name == "start" && e.data["engine"] == "dag");
    if !dag {
        return events
            .iter()
            .filter(|e| e.name == "step")
            .filter_map(|e| e.data["type"].as_str())
            .filter(|t| DAG_TYPES.contains(t))
            .map(|t| format!("{t} event in a run whose engine is not dag"))
            .collect();
    }
    let mut v = Verifier::default();
    for ev in events {
        v.event(ev);
    }
    v.errs
}

#[derive(Default)]
struct Verifier {
    errs: Vec<String>,
    round: u64,
    /// The round the last `replan` announced.
    announced: u64,
    steps: HashMap<String, Step>,
}

impl Verifier {
    fn event(&mut self, ev: &Ev) {
        let d = &ev.data;
        if ev.name == "done" {
            if d["engine"] != "dag" {
                self.errs
                    .push("done of a DAG run without engine: dag".into());
            }
            if d["status"] != "cancelled" && d["rounds"].as_u64() != Some(self.round) {
                self.errs.push(format!(
                    "done.rounds {} but {} plans",
                    d["rounds"], self.round
                ));
            }
            return;
        }
        if ev.name == "compact" {
            self.tagged(ev);
            return;
        }
        if ev.name != "step" {
            return;
        }
        match d["type"].as_str() {
            Some("plan") => self.plan(ev),
            Some("replan") => self.announced = d["round"].as_u64().unwrap_or(0),
            Some("dag_step") => self.step(ev),
            Some("analysis") => self.analysis(ev),
            _ => self.tagged(ev),
        }
    }

    fn plan(&mut self, ev: &Ev) {
        let round = ev.data["round"].as_u64().unwrap_or(0);
        if round != self.round + 1 {
            self.errs
                .push(format!("plan of round {round} after round {}", self.round));
        }
        if round > 1 && self.announced != round {
            self.errs
                .push(format!("plan of round {round} without a replan before it"));
        }
        if let Some(open) = self.steps.iter().find(|(_, s)| !s.is_final()) {
            self.errs.push(format!(
                "round {round} planned while step {} of round {} is not final",
                open.0, self.round
            ));
        }
        self.round = round;
        self.steps = ev.data["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                let deps = s["dependencies"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect();
                (
                    s["id"].as_str().unwrap_or_default().to_string(),
                    Step {
                        deps,
                        statuses: Vec::new(),
                    },
                )
            })
            .collect();
    }

    fn step(&mut self, ev: &Ev) {
        let d = &ev.data;
        let id = d["step_id"].as_str().unwrap_or_default().to_string();
        let status = d["status"].as_str().unwrap_or_default().to_string();
        if d["round"].as_u64() != Some(self.round) {
            self.errs.push(format!(
                "dag_step {id} of round {} during round {}",
                d["round"], self.round
            ));
        }
        let deps_done = self.steps.get(&id).map(|s| {
            s.deps
                .iter()
                .all(|dep| self.steps.get(dep).and_then(Step::last) == Some("completed"))
        });
        let Some(step) = self.steps.get_mut(&id) else {
            self.errs.push(format!("dag_step {id} is not in the plan"));
            return;
        };
        let allowed = matches!(
            (step.last(), status.as_str()),
            (None, "queued" | "failed" | "skipped")
                | (Some("queued"), "running" | "skipped")
                | (Some("running"), "completed" | "failed")
        );
        if !allowed {
            self.errs.push(format!(
                "step {id}: {status} after {:?}",
                step.last().unwrap_or("nothing")
            ));
        }
        if status == "running" && deps_done != Some(true) {
            self.errs
                .push(format!("step {id} runs before its dependencies completed"));
        }
        step.statuses.push(status);
    }

    fn analysis(&mut self, ev: &Ev) {
        if ev.data["round"].as_u64() != Some(self.round) {
            self.errs.push(format!(
                "analysis of round {} during round {}",
                ev.data["round"], self.round
            ));
        }
        if let Some((id, _)) = self.steps.iter().find(|(_, s)| !s.is_final()) {
            self.errs
                .push(format!("analysis before step {id} reached a final status"));
        }
    }

    /// A step's own event: only while that step runs.
    fn tagged(&mut self, ev: &Ev) {
        let Some(id) = ev.data["dag_step"].as_str() else {
            return;
        };
        let running = self.steps.get(id).and_then(Step::last) == Some("running");
        if !running {
            self.errs.push(format!(
                "{} event {} of step {id}, which is not running",
                ev.data["type"].as_str().unwrap_or(&ev.name),
                ev.id
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stream(items: &[Value]) -> Vec<Ev> {
        items
            .iter()
            .enumerate()
            .map(|(i, v)| Ev {
                id: (i + 1).to_string(),
                name: v["event"].as_str().unwrap_or("step").to_string(),
                data: v.clone(),
            })
            .collect()
    }

    fn st(id: &str, status: &str) -> Value {
        json!({"type": "dag_step", "round": 1, "step_id": id, "status": status})
    }

    fn good() -> Vec<Value> {
        vec![
            json!({"event": "start", "engine": "dag"}),
            json!({"type": "plan", "round": 1, "steps": [
                {"id": "A", "dependencies": []}, {"id": "B", "dependencies": ["A"]}]}),
            st("A", "queued"),
            st("A", "running"),
            json!({"type": "tool_start", "dag_step": "A", "call_id": "c"}),
            json!({"type": "tool_end", "dag_step": "A", "call_id": "c"}),
            st("A", "completed"),
            st("B", "queued"),
            st("B", "running"),
            st("B", "completed"),
            json!({"type": "analysis", "round": 1}),
            json!({"event": "done", "engine": "dag", "rounds": 1, "status": "completed"}),
        ]
    }

    #[test]
    fn a_sound_dag_stream_passes() {
        assert_eq!(verify_dag(&stream(&good())), Vec::<String>::new());
    }

    #[test]
    fn each_dag_rule_is_checked() {
        let mut early = good();
        early.swap(6, 8); // B running before A completed
        let errs = verify_dag(&stream(&early));
        assert!(
            errs.iter().any(|e| e.contains("before its dependencies")),
            "{errs:?}"
        );

        let mut late_tag = good();
        late_tag.insert(7, json!({"type": "thinking", "dag_step": "A"}));
        let errs = verify_dag(&stream(&late_tag));
        assert!(errs.iter().any(|e| e.contains("not running")), "{errs:?}");

        let mut after_final = good();
        after_final.insert(7, st("A", "running"));
        let errs = verify_dag(&stream(&after_final));
        assert!(errs.iter().any(|e| e.contains("running after")), "{errs:?}");

        let mut no_replan = good();
        no_replan.insert(11, json!({"type": "plan", "round": 2, "steps": []}));
        let errs = verify_dag(&stream(&no_replan));
        assert!(
            errs.iter().any(|e| e.contains("without a replan")),
            "{errs:?}"
        );
        assert!(errs.iter().any(|e| e.contains("done.rounds")), "{errs:?}");

        let mut early_analysis = good();
        early_analysis.swap(9, 10);
        let errs = verify_dag(&stream(&early_analysis));
        assert!(
            errs.iter().any(|e| e.contains("analysis before")),
            "{errs:?}"
        );

        let mut react = good();
        react[0] = json!({"event": "start", "engine": "react"});
        let errs = verify_dag(&stream(&react));
        assert!(
            errs.iter().all(|e| e.contains("not dag")) && errs.len() == 8,
            "{errs:?}"
        );
    }
}
