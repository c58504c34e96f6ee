//! The built-in tools every agent has (SPEC §6): `calculator`, `current_time` and
//! `http_request` (in `http_request.rs`), gathered by [`builtin_registry`].
//!
//! The calculator uses the maintained `evalexpr` crate, but in a locked-down way: its builtin
//! function table (which includes regex and string functions) is disabled and replaced by a
//! small table of math functions; the expression tree is inspected before evaluation and any
//! assignment, chaining (`;`), string literal or unknown identifier is refused. Integer literals
//! are turned into floats first so that `7 / 2` is `3.5`, as a person (and an LLM) expects.

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
    let mut tree = evalexpr::build_operator_tree::<DefaultNumericTypes>(expression)
        .map_err(|e| ToolError::InvalidArguments(format!("cannot parse expression: {e}")))?;
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
            ToolError::InvalidArguments(format!("malformed expression: {e}"))
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
    fn description(&self) -> &str {
        "Evaluate an arithmetic expression (+ - * / % ^, sqrt, sin, ln, log, min, max, pi, e...)."
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

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn calc(e: &str) -> Result<String, ToolError> {
        evaluate(e)
    }

    #[test]
    fn precedence_and_operators() {
        assert_eq!(calc("2 + 3 * 4").unwrap(), "14");
        assert_eq!(calc("(2 + 3) * 4").unwrap(), "20");
        assert_eq!(calc("2 ^ 10").unwrap(), "1024");
        assert_eq!(calc("-3 ^ 2").unwrap(), "-9");
        assert_eq!(calc("(-3) ^ 2").unwrap(), "9");
        assert_eq!(calc("7 / 2").unwrap(), "3.5");
        assert_eq!(calc("10 % 4").unwrap(), "2");
        assert_eq!(calc("0.1 + 0.2").unwrap(), "0.3");
        assert_eq!(calc("1 / 3").unwrap(), "0.333333333333333");
        assert_eq!(calc("2 > 1").unwrap(), "true");
    }

    #[test]
    fn functions_and_constants() {
        assert_eq!(calc("sqrt(16)").unwrap(), "4");
        assert_eq!(calc("math::sqrt(2) ^ 2").unwrap(), "2");
        assert_eq!(calc("sin(pi / 2)").unwrap(), "1");
        assert_eq!(calc("cos(0) + tan(0)").unwrap(), "1");
        assert_eq!(calc("ln(e)").unwrap(), "1");
        assert_eq!(calc("log(1000)").unwrap(), "3");
        assert_eq!(calc("log(8, 2)").unwrap(), "3");
        assert_eq!(calc("abs(-2.5)").unwrap(), "2.5");
        assert_eq!(calc("floor(2.7) + ceil(2.1) + round(2.5)").unwrap(), "8");
        assert_eq!(calc("min(3, 1, 2) + max(4, 9)").unwrap(), "10");
        assert_eq!(calc("pow(2, 0.5) * pow(2, 0.5)").unwrap(), "2");
        assert_eq!(calc("pi").unwrap(), "3.14159265358979");
        assert_eq!(calc("2 ^ 70").unwrap(), "1.18059162071741e21");
    }

    #[test]
    fn errors_are_helpful_not_panics() {
        assert!(
            matches!(calc("1 / 0"), Err(ToolError::Failed(m)) if m.contains("division by zero"))
        );
        assert!(matches!(calc("sqrt(-1)"), Err(ToolError::Failed(_))));
        assert!(
            matches!(calc("2 +"), Err(ToolError::InvalidArguments(m)) if m.contains("malformed"))
        );
        assert!(
            matches!(calc("(2 + 1"), Err(ToolError::InvalidArguments(m)) if m.contains("parse"))
        );
        assert!(matches!(
            calc("pow(2)"),
            Err(ToolError::InvalidArguments(_))
        ));
        assert!(
            matches!(calc("foo + 1"), Err(ToolError::InvalidArguments(m)) if m.contains("'foo'"))
        );
        assert!(
            matches!(calc("bogus(1)"), Err(ToolError::InvalidArguments(m)) if m.contains("'bogus'"))
        );
        assert!(matches!(calc(""), Err(ToolError::InvalidArguments(_))));
        assert!(matches!(calc("1, 2"), Err(ToolError::InvalidArguments(_))));
    }

    #[test]
    fn assignment_chains_strings_and_builtins_are_refused() {
        for e in ["x = 3", "a = 1; a + 1", "x += 1", "pi = 3", "1; 2"] {
            assert!(
                matches!(calc(e), Err(ToolError::InvalidArguments(_))),
                "{e} should be refused"
            );
        }
        assert!(
            matches!(calc("\"a\" + \"b\""), Err(ToolError::InvalidArguments(m)) if m.contains("strings"))
        );
        // evalexpr's own string/regex builtins are not reachable.
        for e in ["str::to_uppercase(1)", "len(1)", "random()", "typeof(1)"] {
            assert!(calc(e).is_err(), "{e} should not be callable");
        }
    }

    #[test]
    fn overly_long_input_is_refused_before_parsing() {
        let long = "1+".repeat(MAX_EXPRESSION_LEN) + "1";
        match calc(&long) {
            Err(ToolError::InvalidArguments(m)) => assert!(m.contains("limit")),
            other => panic!("expected refusal, got {other:?}"),
        }
        let ok = "1+".repeat(MAX_EXPRESSION_LEN / 2 - 1) + "1";
        assert_eq!(calc(&ok).unwrap(), (MAX_EXPRESSION_LEN / 2).to_string());
    }

    #[test]
    fn deep_nesting_does_not_overflow_the_stack() {
        let parens = "(".repeat(499) + "1" + &")".repeat(499);
        assert!(parens.len() <= MAX_EXPRESSION_LEN);
        assert_eq!(calc(&parens).unwrap(), "1");
        let minus = "-".repeat(998) + "1";
        assert_eq!(calc(&minus).unwrap(), "1");
    }

    #[tokio::test]
    async fn calculator_tool_reads_its_argument() {
        let out = Calculator
            .call(json!({"expression": "6 * 7"}))
            .await
            .unwrap();
        assert_eq!(out, ToolOutput::text("42"));
        assert!(matches!(
            Calculator.call(json!({})).await,
            Err(ToolError::InvalidArguments(_))
        ));
        assert_eq!(Calculator.parameters()["required"], json!(["expression"]));
    }

    #[test]
    fn time_in_utc_and_in_a_zone() {
        let now = chrono::Utc.with_ymd_and_hms(2024, 7, 1, 12, 30, 0).unwrap();
        assert_eq!(time_in_zone(now, None).unwrap(), "2024-07-01T12:30:00Z");
        assert_eq!(time_in_zone(now, Some("")).unwrap(), "2024-07-01T12:30:00Z");
        assert_eq!(
            time_in_zone(now, Some("Europe/Paris")).unwrap(),
            "2024-07-01T14:30:00+02:00"
        );
        assert_eq!(
            time_in_zone(now, Some("America/New_York")).unwrap(),
            "2024-07-01T08:30:00-04:00"
        );
        match time_in_zone(now, Some("Mars/Olympus")) {
            Err(ToolError::InvalidArguments(m)) => assert!(m.contains("Mars/Olympus")),
            other => panic!("expected InvalidArguments, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn current_time_tool_parses_rfc3339() {
        let out = CurrentTime.call(json!({})).await.unwrap();
        let t = chrono::DateTime::parse_from_rfc3339(&out.content).unwrap();
        assert_eq!(t.offset().local_minus_utc(), 0);
        let age = chrono::Utc::now().signed_duration_since(t);
        assert!(age.num_seconds().abs() < 60);
        let tokyo = CurrentTime
            .call(json!({"timezone": "Asia/Tokyo"}))
            .await
            .unwrap();
        assert!(tokyo.content.ends_with("+09:00"), "{}", tokyo.content);
        assert!(matches!(
            CurrentTime.call(json!({"timezone": "Nowhere/City"})).await,
            Err(ToolError::InvalidArguments(_))
        ));
    }

    #[test]
    fn registry_holds_the_three_builtins() {
        let reg = builtin_registry(HttpRequestOptions::default());
        assert_eq!(reg.names(), ["calculator", "current_time", "http_request"]);
        for def in reg.definitions().iter() {
            assert_eq!(def.parameters["type"], "object", "{}", def.name);
            assert!(def.parameters["required"].is_array(), "{}", def.name);
        }
    }

    #[test]
    fn definitions_are_built_once_per_set_of_tools() {
        let full = builtin_registry(HttpRequestOptions::default());
        // A clone made before the first use shares what the first use builds.
        let early = full.clone();
        let defs = full.definitions();
        assert!(Arc::ptr_eq(&defs, &early.definitions()));
        assert!(Arc::ptr_eq(&defs, &full.clone().definitions()));
        // Another set of tools gets its own, and the shared ones do not change.
        let mut more = full.clone();
        more.register(Arc::new(Calculator));
        more.register(Arc::new(CurrentTime));
        let smaller = full.filtered(&["calculator"]);
        assert_eq!(smaller.definitions().len(), 1);
        assert_eq!(smaller.definitions()[0].name, "calculator");
        assert_eq!(more.definitions().len(), 3);
        assert!(!Arc::ptr_eq(&defs, &more.definitions()));
        let again = full.definitions();
        let names: Vec<&str> = again.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["calculator", "current_time", "http_request"]);
    }
}
