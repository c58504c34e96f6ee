//! A plan: its steps as the planner writes them, how a reply is read into one
//! (lenient about shape, strict about meaning) and the validation every plan must pass before it
//! runs: ids short and unique, dependencies known, no cycle, 1 to `DAG_MAX_STEPS` steps. A duplicate id is
//! reported as a duplicate, never as the cycle it would look like to a topological sort.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::{json, Value};

use crate::domain::text::{clip, NAME_CHARS};

/// The longest step id, in characters: ids are quoted in every prompt, log line and event that
/// names the step, so a plan with a longer one is sent back to the planner.
pub const MAX_ID_CHARS: usize = 64;

/// One step as planned.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct PlanStep {
    pub id: String,
    pub task: String,
    #[serde(default)]
    pub dependencies: Vec<String>,
    #[serde(default)]
    pub tool_hint: Option<String>,
    #[serde(default)]
    pub model_hint: Option<String>,
}

/// The steps of one round, in the planner's order.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub steps: Vec<PlanStep>,
}

/// Why a plan cannot run; the message goes back to the planner for its one re-plan.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("the plan has no steps")]
    Empty,
    /// The steps read (the planner reads one more than allowed) and the most allowed.
    #[error("the plan has more than the {1} steps allowed")]
    TooMany(usize, usize),
    #[error("step id '{}' is longer than {MAX_ID_CHARS} characters; use short ids", clip(.0, NAME_CHARS))]
    LongId(String),
    #[error("step id '{}' is used by more than one step; every id must be unique", clip(.0, NAME_CHARS))]
    Duplicate(String),
    #[error(
        "step '{}' depends on '{}', which is not a step of the plan",
        clip(.0, NAME_CHARS),
        clip(.1, NAME_CHARS)
    )]
    UnknownDependency(String, String),
    #[error("the dependencies form a cycle: {}", cycle_text(.0))]
    Cycle(Vec<String>),
}

/// A cycle as `a -> b -> a`, each id clipped.
fn cycle_text(ids: &[String]) -> String {
    let ids: Vec<_> = ids.iter().map(|id| clip(id, NAME_CHARS)).collect();
    ids.join(" -> ")
}

/// The planner's schema.
pub fn schema(max_steps: usize) -> Value {
    json!({
        "type": "object",
        "description": "Return the plan as the arguments of this function. Calling it has no side effect.",
        "properties": {
            "steps": {
                "type": "array",
                "minItems": 1,
                "maxItems": max_steps,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "short unique id"},
                        "task": {"type": "string", "description": "what this step must find out or do, in 1 to 3 sentences"},
                        "dependencies": {"type": "array", "items": {"type": "string"}, "description": "ids of the steps whose results this step needs"},
                        "tool_hint": {"type": ["string", "null"], "description": "the tool most likely needed, or null"},
                        "model_hint": {"type": ["string", "null"], "description": "a model role from the list, or null"}
                    },
                    "required": ["id", "task", "dependencies"]
                }
            }
        },
        "required": ["steps"]
    })
}

/// Reads a reply into a plan: `{steps: [...]}`, `steps` as a JSON string (double-encoded),
/// or a bare step object. Numbers as ids become strings, blank hints none. Meaning is checked
/// by [`validate`], not here, so an invalid plan is re-planned with its error rather than
/// degrading the structured call to a weaker level.
pub fn parse(raw: &Value) -> Result<Plan, String> {
    parse_at_most(raw, usize::MAX)
}

/// [`parse`], reading no more than the first `limit` steps: the planner passes one more than
/// the plan may have, so a reply of 100,000 steps costs no more than that to read and still
/// fails [`validate`] as too long. The reply is read where it is, never copied.
pub fn parse_at_most(raw: &Value, limit: usize) -> Result<Plan, String> {
    let decoded;
    let steps = match raw.get("steps") {
        Some(Value::String(s)) => {
            decoded = serde_json::from_str::<Value>(s).map_err(|e| e.to_string())?;
            &decoded
        }
        Some(v) => v,
        None if raw.get("task").is_some() => {
            return Ok(Plan {
                steps: vec![parse_step(raw)?],
            })
        }
        None => return Err("no `steps` array".into()),
    };
    let Value::Array(items) = steps else {
        return Err("`steps` is not an array".into());
    };
    let steps = items
        .iter()
        .take(limit)
        .map(parse_step)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Plan { steps })
}

fn parse_step(v: &Value) -> Result<PlanStep, String> {
    let text = |key: &str| match v.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let id = text("id").ok_or("a step has no id")?;
    let task =
        text("task").ok_or_else(|| format!("step '{}' has no task", clip(&id, NAME_CHARS)))?;
    let dependencies = match v.get("dependencies") {
        Some(Value::Array(ds)) => ds
            .iter()
            .filter_map(|d| match d {
                Value::String(s) => Some(s.trim().to_string()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(PlanStep {
        id,
        task,
        dependencies,
        tool_hint: text("tool_hint"),
        model_hint: text("model_hint"),
    })
}

/// Checks a plan in the order a reader fixes it: size, id length, duplicate ids, unknown
/// dependencies, then cycles.
pub fn validate(plan: &Plan, max_steps: usize) -> Result<(), PlanError> {
    let n = plan.steps.len();
    if n == 0 {
        return Err(PlanError::Empty);
    }
    if n > max_steps {
        return Err(PlanError::TooMany(n, max_steps));
    }
    if let Some(s) = plan
        .steps
        .iter()
        .find(|s| s.id.chars().nth(MAX_ID_CHARS).is_some())
    {
        return Err(PlanError::LongId(s.id.clone()));
    }
    let mut seen = HashSet::new();
    for s in &plan.steps {
        if !seen.insert(s.id.as_str()) {
            return Err(PlanError::Duplicate(s.id.clone()));
        }
    }
    for s in &plan.steps {
        if let Some(d) = s.dependencies.iter().find(|d| !seen.contains(d.as_str())) {
            return Err(PlanError::UnknownDependency(s.id.clone(), d.clone()));
        }
    }
    match find_cycle(plan) {
        Some(cycle) => Err(PlanError::Cycle(cycle)),
        None => Ok(()),
    }
}

/// A cycle as a path `a -> b -> a`, found by depth-first search (ids are unique here).
fn find_cycle(plan: &Plan) -> Option<Vec<String>> {
    let deps: HashMap<&str, &[String]> = plan
        .steps
        .iter()
        .map(|s| (s.id.as_str(), s.dependencies.as_slice()))
        .collect();
    // 0 unvisited, 1 on the current path, 2 done.
    let mut state: HashMap<&str, u8> = HashMap::new();
    let mut path: Vec<&str> = Vec::new();
    fn visit<'a>(
        id: &'a str,
        deps: &HashMap<&'a str, &'a [String]>,
        state: &mut HashMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match state.get(id).copied().unwrap_or(0) {
            2 => return None,
            1 => {
                let from = path.iter().position(|p| *p == id).unwrap_or(0);
                let mut cycle: Vec<String> = path[from..].iter().map(|s| s.to_string()).collect();
                cycle.push(id.to_string());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(id, 1);
        path.push(id);
        for d in deps.get(id).copied().unwrap_or(&[]) {
            if let Some(c) = visit(d.as_str(), deps, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(id, 2);
        None
    }
    plan.steps
        .iter()
        .find_map(|s| visit(s.id.as_str(), &deps, &mut state, &mut path))
}

/// The plan a run falls back to when planning fails twice: one step whose task is the query.
pub fn single_step(query: &str) -> Plan {
    Plan {
        steps: vec![PlanStep {
            id: "1".into(),
            task: query.to_string(),
            dependencies: Vec::new(),
            tool_hint: None,
            model_hint: None,
        }],
    }
}
