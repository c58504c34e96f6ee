//! The built-in tools every agent has (docs/configuration.md): `calculator`, `current_time` and
//! `http_request` (in `http_request.rs`), gathered by [`builtin_registry`].
//!
//! The calculator uses the maintained `evalexpr` crate, but in a locked-down way: its builtin
//! function table (which includes regex and string functions) is disabled and replaced by a
//! small table of math functions; the expression tree is inspected before evaluation and any
//! assignment, chaining (`;`), string literal or unknown identifier is refused. Integer literals
//! are turned into floats first so that `7 / 2` is `3.5`, as a person (and an LLM) expects, and
//! powers may be written `^` or `**`, chained right to left (`powers`).

use std::sync::Arc;

use async_trait::async_trait;
use evalexpr::{
    Context, ContextWithMutableFunctions, ContextWithMutableVariables, DefaultNumericTypes,
    EvalexprError, Function, HashMapContext, Node, Operator, Value,
};
use serde_json::{json, Value as Json};

use super::http_request::{HttpRequestOptions, HttpRequestTool};
use super::{Tool, ToolError, ToolOutput, ToolRegistry};

/// Longest expression the calculator accepts; longer input is refused before parsing.
pub const MAX_EXPRESSION_LEN: usize = 1000;

/// A registry holding the three built-ins, in the order `calculator`, `current_time`,
/// `http_request`.
pub fn builtin_registry(http: HttpRequestOptions) -> ToolRegistry {
    ToolRegistry::new()
        .with(Arc::new(Calculator))
        .with(Arc::new(CurrentTime))
        .with(Arc::new(HttpRequestTool::new(http)))
}

/// `calculator {expression}`: arithmetic with functions; no variables, no code execution.
#[derive(Clone, Copy, Debug, Default)]
pub struct Calculator;

type Ctx = HashMapContext<DefaultNumericTypes>;
type UnaryFn = fn(f64) -> f64;
type BinaryFn = fn(f64, f64) -> f64;
type EvalResult = Result<Value<DefaultNumericTypes>, EvalexprError<DefaultNumericTypes>>;

fn unary(f: UnaryFn) -> Function<DefaultNumericTypes> {
    Function::new(move |arg: &Value<DefaultNumericTypes>| -> EvalResult {
        Ok(Value::Float(f(arg.as_number()?)))
    })
}

fn binary(f: BinaryFn) -> Function<DefaultNumericTypes> {
    Function::new(move |arg: &Value<DefaultNumericTypes>| -> EvalResult {
        match arg {
            Value::Tuple(t) if t.len() == 2 => {
                Ok(Value::Float(f(t[0].as_number()?, t[1].as_number()?)))
            }
            Value::Tuple(t) => Err(wrong_arity(t.len())),
            _ => Err(wrong_arity(1)),
        }
    })
}

fn wrong_arity(actual: usize) -> EvalexprError<DefaultNumericTypes> {
    EvalexprError::WrongFunctionArgumentAmount {
        expected: 2..=2,
        actual,
    }
}

/// `fold` over one number or a tuple of numbers (min, max).
fn variadic(f: BinaryFn) -> Function<DefaultNumericTypes> {
    Function::new(move |arg: &Value<DefaultNumericTypes>| -> EvalResult {
        let nums = match arg {
            Value::Tuple(t) => t
                .iter()
                .map(|v| v.as_number())
                .collect::<Result<Vec<_>, _>>()?,
            other => vec![other.as_number()?],
        };
        Ok(Value::Float(nums.into_iter().reduce(f).unwrap_or(f64::NAN)))
    })
}

/// `log(x)` is the common (base-10) logarithm, `log(x, b)` the logarithm in base `b`.
fn log_fn() -> Function<DefaultNumericTypes> {
    Function::new(|arg: &Value<DefaultNumericTypes>| -> EvalResult {
        match arg {
            Value::Tuple(_) => {
                let t = arg.as_fixed_len_tuple(2)?;
                Ok(Value::Float(t[0].as_number()?.log(t[1].as_number()?)))
            }
            other => Ok(Value::Float(other.as_number()?.log10())),
        }
    })
}

/// The evaluation context: constants and the function table (each also under evalexpr's
/// `math::` spelling so expressions written for evalexpr keep working).
fn context() -> Result<Ctx, EvalexprError<DefaultNumericTypes>> {
    let mut ctx = Ctx::new();
    ctx.set_builtin_functions_disabled(true)?;
    for (name, value) in [
        ("pi", std::f64::consts::PI),
        ("PI", std::f64::consts::PI),
        ("e", std::f64::consts::E),
        ("E", std::f64::consts::E),
        ("tau", std::f64::consts::TAU),
    ] {
        ctx.set_value(name.into(), Value::Float(value))?;
    }
    let unaries: [(&str, UnaryFn); 19] = [
        ("sqrt", f64::sqrt),
        ("cbrt", f64::cbrt),
        ("sin", f64::sin),
        ("cos", f64::cos),
        ("tan", f64::tan),
        ("asin", f64::asin),
        ("acos", f64::acos),
        ("atan", f64::atan),
        ("sinh", f64::sinh),
        ("cosh", f64::cosh),
        ("tanh", f64::tanh),
        ("ln", f64::ln),
        ("log2", f64::log2),
        ("log10", f64::log10),
        ("exp", f64::exp),
        ("abs", f64::abs),
        ("floor", f64::floor),
        ("ceil", f64::ceil),
        ("round", f64::round),
    ];
    for (name, f) in unaries {
        ctx.set_function(name.into(), unary(f))?;
        ctx.set_function(format!("math::{name}"), unary(f))?;
    }
    for (name, f) in [
        ("pow", f64::powf as BinaryFn),
        ("atan2", f64::atan2),
        ("hypot", f64::hypot),
    ] {
        ctx.set_function(name.into(), binary(f))?;
        ctx.set_function(format!("math::{name}"), binary(f))?;
    }
    ctx.set_function("min".into(), variadic(f64::min))?;
    ctx.set_function("max".into(), variadic(f64::max))?;
    ctx.set_function("log".into(), log_fn())?;
    ctx.set_function("math::log".into(), log_fn())?;
    Ok(ctx)
}

/// Refuses what a calculator has no business doing, then turns integer literals into floats.
fn sanitize(tree: &mut Node<DefaultNumericTypes>) -> Result<(), ToolError> {
    for node in tree.iter() {
        match node.operator() {
            Operator::Assign
            | Operator::AddAssign
            | Operator::SubAssign
            | Operator::MulAssign
            | Operator::DivAssign
            | Operator::ModAssign
            | Operator::ExpAssign
            | Operator::AndAssign
            | Operator::OrAssign
            | Operator::VariableIdentifierWrite { .. } => {
                return Err(ToolError::InvalidArguments(
                    "assignment is not allowed: the calculator has no variables".into(),
                ))
            }
            Operator::Chain => {
                return Err(ToolError::InvalidArguments(
                    "';' is not allowed: give one expression".into(),
                ))
            }
            Operator::Const {
                value: Value::String(_),
            } => {
                return Err(ToolError::InvalidArguments(
                    "strings are not allowed: the calculator only works on numbers".into(),
                ))
            }
            _ => {}
        }
    }
    for op in tree.iter_operators_mut() {
        if let Operator::Const { value } = op {
            if let Value::Int(i) = value {
                *value = Value::Float(*i as f64);
            }
        }
    }
    Ok(())
}

/// Plain number text: integers without `.0`, 15 significant digits (so `0.1 + 0.2` is `0.3`),
/// scientific notation for very large or very small magnitudes.
pub fn format_number(x: f64) -> String {
    let rounded: f64 = format!("{x:.14e}").parse().unwrap_or(x);
    let magnitude = rounded.abs();
    if rounded == 0.0 {
        "0".into()
    } else if !(1e-6..1e16).contains(&magnitude) {
        format!("{rounded:e}")
    } else {
        format!("{rounded}")
    }
}

/// Evaluates one expression under the calculator's rules.
pub fn evaluate(expression: &str) -> Result<String, ToolError> {
    let expression = expression.trim();
    if expression.is_empty() {
        return Err(ToolError::InvalidArguments("expression is empty".into()));
    }
    if expression.len() > MAX_EXPRESSION_LEN {
        return Err(ToolError::InvalidArguments(format!(
            "expression is {} characters long; the limit is {MAX_EXPRESSION_LEN}",
            expression.len()
        )));
    }
    let hint = if expression.contains(['*', '^']) {
        " (use ^ or ** for powers)"
    } else {
        ""
    };
    let mut tree =
        evalexpr::build_operator_tree::<DefaultNumericTypes>(&powers::rewrite(expression))
            .map_err(|e| {
                ToolError::InvalidArguments(format!("cannot parse expression: {e}{hint}"))
            })?;
    sanitize(&mut tree)?;
    let ctx = context().map_err(|e| ToolError::Failed(format!("calculator setup: {e}")))?;
    let value = tree.eval_with_context(&ctx).map_err(|e| match e {
        EvalexprError::VariableIdentifierNotFound(name) => ToolError::InvalidArguments(format!(
            "unknown name '{name}'; constants are pi, e and tau"
        )),
        EvalexprError::FunctionIdentifierNotFound(name) => ToolError::InvalidArguments(format!(
            "unknown function '{name}'; available: sqrt, cbrt, abs, floor, ceil, round, exp, ln, \
             log, log2, log10, sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh, pow, \
             hypot, min, max"
        )),
        e @ (EvalexprError::WrongOperatorArgumentAmount { .. }
        | EvalexprError::WrongFunctionArgumentAmount { .. }) => {
            ToolError::InvalidArguments(format!("malformed expression: {e}{hint}"))
        }
        other => ToolError::Failed(format!("cannot evaluate expression: {other}")),
    })?;
    match value {
        Value::Float(x) if x.is_finite() => Ok(format_number(x)),
        Value::Float(x) => Err(ToolError::Failed(format!(
            "the result is not a finite number ({x}); check for a division by zero or a value \
             outside a function's domain"
        ))),
        Value::Int(i) => Ok(i.to_string()),
        Value::Boolean(b) => Ok(b.to_string()),
        other => Err(ToolError::InvalidArguments(format!(
            "the expression must produce one number, got {other}"
        ))),
    }
}

#[async_trait]
impl Tool for Calculator {
    fn name(&self) -> &str {
        "calculator"
    }
    /// No side effect: a call its instance left running is simply made again on resume, and
    /// it does not wait for the durable in-flight record that non-idempotent calls need.
    fn idempotent(&self) -> bool {
        true
    }
    fn description(&self) -> &str {
        "Evaluate an arithmetic expression (+ - * / %, ^ or ** for powers, sqrt, sin, ln, log, min, max, pi, e...)."
    }
    fn parameters(&self) -> Json {
        json!({
            "type": "object",
            "properties": {
                "expression": {
                    "type": "string",
                    "description": "e.g. \"2 * (3 + 4) ^ 2\" or \"sqrt(2) * sin(pi / 4)\""
                }
            },
            "required": ["expression"],
            "additionalProperties": false
        })
    }
    async fn call(&self, args: Json) -> Result<ToolOutput, ToolError> {
        let expression = args
            .get("expression")
            .and_then(Json::as_str)
            .ok_or_else(|| {
                ToolError::InvalidArguments("'expression' (a string) is required".into())
            })?;
        evaluate(expression).map(ToolOutput::text)
    }
}

/// `current_time {timezone?}`: the current time as RFC 3339, UTC unless an IANA zone is given.
#[derive(Clone, Copy, Debug, Default)]
pub struct CurrentTime;

/// The time `now` in `timezone` (an IANA name such as `Europe/Paris`; empty or absent = UTC).
pub fn time_in_zone(
    now: chrono::DateTime<chrono::Utc>,
    timezone: Option<&str>,
) -> Result<String, ToolError> {
    match timezone.map(str::trim).filter(|z| !z.is_empty()) {
        None => Ok(now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        Some(zone) => {
            let tz: chrono_tz::Tz = zone.parse().map_err(|_| {
                ToolError::InvalidArguments(format!(
                    "unknown timezone '{zone}'; use an IANA name such as 'Europe/Paris' or 'UTC'"
                ))
            })?;
            Ok(now
                .with_timezone(&tz)
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, false))
        }
    }
}

#[async_trait]
impl Tool for CurrentTime {
    fn name(&self) -> &str {
        "current_time"
    }
    /// No side effect: a call its instance left running is simply made again on resume, and
    /// it does not wait for the durable in-flight record that non-idempotent calls need.
    fn idempotent(&self) -> bool {
        true
    }
    fn description(&self) -> &str {
        "Current date and time (RFC 3339), in UTC or in the given IANA timezone."
    }
    fn parameters(&self) -> Json {
        json!({
            "type": "object",
            "properties": {
                "timezone": {
                    "type": "string",
                    "description": "IANA timezone such as \"Europe/Paris\"; UTC when omitted"
                }
            },
            "required": [],
            "additionalProperties": false
        })
    }
    async fn call(&self, args: Json) -> Result<ToolOutput, ToolError> {
        let zone = match args.get("timezone") {
            None | Some(Json::Null) => None,
            Some(Json::String(s)) => Some(s.as_str()),
            Some(_) => {
                return Err(ToolError::InvalidArguments(
                    "'timezone' must be a string".into(),
                ))
            }
        };
        time_in_zone(chrono::Utc::now(), zone).map(ToolOutput::text)
    }
}

mod powers;
#[cfg(test)]
mod tests;
