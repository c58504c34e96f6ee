//! The analyser: one structured call over the goal and every step's status and
//! result, `{achieved, confidence, reasoning}`. Any failure counts as not achieved with
//! confidence 0, so a broken analyser costs a re-plan at most, never the answer.

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::executor::StepState;
use super::prompts::{ANALYSER_SYSTEM, TASK_CHARS};
use crate::agent::synthesis::truncate_chars;
use crate::domain::text::{clip, NAME_CHARS};
use crate::llm::{structured_llm_call, Llm, Message, StructuredCall, Usage};
use crate::telemetry::{with_call_kind, CallKind};

/// Characters of each step result the analyser reads.
const RESULT_CHARS: usize = 10_000;

/// The analyser's verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    pub achieved: bool,
    pub confidence: f64,
    pub reasoning: String,
    /// No verdict could be read: the fields are the failure defaults.
    pub failed: bool,
}

impl Analysis {
    fn failed(why: &str) -> Self {
        Self {
            achieved: false,
            confidence: 0.0,
            reasoning: format!("The analysis failed ({why})."),
            failed: true,
        }
    }
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "achieved": {"type": "boolean"},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "reasoning": {"type": "string"}
        },
        "required": ["achieved", "confidence", "reasoning"]
    })
}

fn parse(v: &Value) -> Result<Analysis, String> {
    let achieved = v
        .get("achieved")
        .and_then(Value::as_bool)
        .ok_or("no boolean `achieved`")?;
    let confidence = v
        .get("confidence")
        .and_then(Value::as_f64)
        .ok_or("no number `confidence`")?;
    let reasoning = v
        .get("reasoning")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Ok(Analysis {
        achieved,
        confidence: confidence.clamp(0.0, 1.0),
        reasoning,
        failed: false,
    })
}

/// A step as the analyser and the synthesiser read it.
pub fn describe_step(s: &StepState, cut: usize) -> String {
    let status = s.status.map(|st| st.as_str()).unwrap_or("pending");
    let mut out = format!(
        "[{}] ({status}) {}\n",
        clip(&s.step.id, NAME_CHARS),
        clip(&s.step.task, TASK_CHARS)
    );
    if let Some(r) = &s.result {
        out.push_str(&format!("Result: {}\n", truncate_chars(r, cut)));
    }
    if let Some(e) = &s.error {
        out.push_str(&format!("Error: {}\n", clip(e, cut)));
    }
    out
}

/// Judges a round; `None` when cancelled.
pub async fn analyse(
    llm: &dyn Llm,
    goal: &str,
    steps: &[StepState],
    cancel: &CancellationToken,
) -> (Option<Analysis>, Usage) {
    let mut user = format!("Goal:\n{goal}\n\nSteps:\n");
    for s in steps {
        user.push_str(&describe_step(s, RESULT_CHARS));
    }
    let call = StructuredCall {
        messages: vec![Message::system(ANALYSER_SYSTEM), Message::user(user)],
        schema_name: "analyse_results".into(),
        schema: schema(),
        parse_fn: Box::new(parse),
        default_value: None,
        regex_fallback: None,
    };
    let reply = tokio::select! {
        _ = cancel.cancelled() => return (None, Usage::default()),
        r = with_call_kind(CallKind::Analysis, structured_llm_call(llm, call)) => r,
    };
    match reply {
        Ok(r) => (Some(r.value), r.usage),
        Err(crate::llm::StructuredError::Exhausted {
            usage, last_error, ..
        }) => {
            tracing::warn!(error = %last_error, "the DAG analysis failed");
            (Some(Analysis::failed("no usable verdict")), usage)
        }
    }
}
