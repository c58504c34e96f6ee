//! The answer of a DAG run: the answer synthesiser of a ReAct run reads the goal, every round's
//! steps with their results and the last analysis; its fallback — when it fails, or when
//! nothing can be synthesised — is the completed steps' results, so the user always gets an
//! answer. Also the texts the rounds hand each other: the goal with the user's follow-ups and
//! the re-planning context.

use super::analyse::{describe_step, Analysis};
use super::executor::StepState;
use super::prompts::ANSWER_INTRO;
use crate::agent::events::DagStatus;
use crate::agent::synthesis::truncate_chars;

/// One round as the next ones and the answer read it.
#[derive(Clone, Debug)]
pub struct Round {
    pub number: u32,
    pub steps: Vec<StepState>,
    /// `None` when the round was interrupted (or cancelled) before its analysis.
    pub analysis: Option<Analysis>,
    /// Why the planner fell back to the one-step plan, if it did.
    pub plan_fallback: Option<String>,
}

/// The goal: the query and the follow-ups the user sent while the plan ran.
pub fn goal(query: &str, follow_ups: &[String]) -> String {
    let mut g = query.to_string();
    for f in follow_ups {
        g.push_str(&format!("\n\n[User follow-up]: {f}"));
    }
    g
}

/// Every previous round for the planner: the analysis and each step's status and result (the
/// latest round's results cut to 500 characters, older ones to 200).
pub fn replan_context(rounds: &[Round]) -> String {
    let mut s = String::from("Previous rounds:\n");
    for (i, r) in rounds.iter().enumerate() {
        let cut = if i + 1 == rounds.len() { 500 } else { 200 };
        s.push_str(&format!("Round {}:\n", r.number));
        for st in &r.steps {
            s.push_str(&describe_step(st, cut));
        }
        match &r.analysis {
            Some(a) => s.push_str(&format!(
                "Analysis: achieved {}, confidence {:.2}. {}\n",
                a.achieved, a.confidence, a.reasoning
            )),
            None => s.push_str("Analysis: none (the user sent a new message).\n"),
        }
    }
    s
}

/// The synthesiser's user message.
pub fn trace(query: &str, rounds: &[Round], draft: &str, cut: usize) -> String {
    let mut s = format!("{ANSWER_INTRO}{query}\n\nResults of the plan's steps:\n");
    for r in rounds {
        if rounds.len() > 1 {
            s.push_str(&format!("Round {}:\n", r.number));
        }
        for st in &r.steps {
            s.push_str(&describe_step(st, cut));
        }
    }
    if let Some(a) = rounds.iter().rev().find_map(|r| r.analysis.as_ref()) {
        s.push_str(&format!(
            "\nAnalysis: achieved {}, confidence {:.2}. {}\n",
            a.achieved, a.confidence, a.reasoning
        ));
    }
    s.push_str(&format!("\nDraft answer:\n{draft}\n"));
    s
}

/// The completed steps' results (latest round first wins for a repeated id), or a sentence
/// saying what failed when none completed.
pub fn fallback_text(rounds: &[Round], cut: usize) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    for r in rounds {
        for st in &r.steps {
            match (st.status, &st.result, &st.error) {
                (Some(DagStatus::Completed), Some(res), _) => {
                    parts.push(format!("**{}**: {}", st.step.id, truncate_chars(res, cut)))
                }
                (_, _, Some(e)) => errors.push(format!("{}: {e}", st.step.id)),
                _ => {}
            }
        }
    }
    if parts.is_empty() {
        let why = if errors.is_empty() {
            "no step completed".to_string()
        } else {
            errors.join("; ")
        };
        return format!("Sorry, I could not complete this request ({why}).");
    }
    parts.join("\n\n---\n\n")
}
