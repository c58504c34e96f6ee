//! The mock provider's answers to DAG mode's structured calls, recognised by the
//! function a request forces (`tool_choice`): a plan of two independent steps and one that
//! needs both, an analysis that is satisfied, and a router that picks `dag`. Lets load tests
//! and benchmarks run real DAG plans (parallel steps) instead of the planner's fallback.

use serde_json::{json, Value};

/// The arguments the forced function `name` is called with, if it is one of DAG mode's.
pub(super) fn forced_arguments(tool_choice: Option<&Value>) -> Option<(String, Value)> {
    let name = tool_choice?
        .pointer("/function/name")
        .and_then(Value::as_str)?
        .to_string();
    let args = match name.as_str() {
        "create_plan" => json!({"steps": [
            {"id": "s1", "task": "Work out the first part", "dependencies": []},
            {"id": "s2", "task": "Work out the second part", "dependencies": []},
            {"id": "s3", "task": "Combine both parts", "dependencies": ["s1", "s2"]}
        ]}),
        "analyse_results" => {
            json!({"achieved": true, "confidence": 0.9, "reasoning": "every part is answered"})
        }
        "choose_engine" => json!({"engine": "dag", "reasoning": "the mock always plans"}),
        _ => return None,
    };
    Some((name, args))
}
