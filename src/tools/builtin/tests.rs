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
fn double_star_is_a_power_and_powers_chain_to_the_right() {
    assert_eq!(calc("2 ** 32").unwrap(), "4294967296");
    assert_eq!(calc("2**10").unwrap(), "1024");
    assert_eq!(calc("2 ** 3 ** 2").unwrap(), "512");
    assert_eq!(calc("2 ^ 3 ^ 2").unwrap(), "512", "^ chains the same way");
    assert_eq!(calc("2 ** 3 ^ 2 ** 1").unwrap(), "512");
    assert_eq!(calc("(2 ** 3) ** 2").unwrap(), "64");
    assert_eq!(calc("-2 ** 2").unwrap(), "-4");
    assert_eq!(calc("-2 ^ 2").unwrap(), "-4");
    assert_eq!(calc("2 ** -1").unwrap(), "0.5");
    assert_eq!(calc("3 * 2 ** 2 + 1").unwrap(), "13");
    assert_eq!(calc("max(2 ** 3, 3 ** 2) * sqrt(4) ** 2").unwrap(), "36");
    assert_eq!(calc("(1 + 1) ** (1 + 2) ** 2").unwrap(), "512");
}

#[test]
fn a_malformed_power_says_how_to_write_one() {
    for e in ["2 *** 3", "2 ^", "** 2"] {
        match calc(e) {
            Err(ToolError::InvalidArguments(m)) => {
                assert!(m.contains("use ^ or ** for powers"), "{e}: {m}")
            }
            other => panic!("{e}: expected a refusal, got {other:?}"),
        }
    }
    match calc("2 +") {
        Err(ToolError::InvalidArguments(m)) => assert!(!m.contains("powers"), "{m}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
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
    assert!(matches!(calc("1 / 0"), Err(ToolError::Failed(m)) if m.contains("division by zero")));
    assert!(matches!(calc("sqrt(-1)"), Err(ToolError::Failed(_))));
    assert!(matches!(calc("2 +"), Err(ToolError::InvalidArguments(m)) if m.contains("malformed")));
    assert!(matches!(calc("(2 + 1"), Err(ToolError::InvalidArguments(m)) if m.contains("parse")));
    assert!(matches!(
        calc("pow(2)"),
        Err(ToolError::InvalidArguments(_))
    ));
    assert!(matches!(calc("foo + 1"), Err(ToolError::InvalidArguments(m)) if m.contains("'foo'")));
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
