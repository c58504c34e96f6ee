use super::*;

fn expect(json: &str) -> Expect {
    serde_json::from_str(json).unwrap()
}

#[test]
fn a_value_matches_as_a_whole_token_after_normalising() {
    let e = expect("391");
    assert!(e.matches("17 * 23 = **391**."));
    assert!(e.matches("The answer is 391"));
    assert!(!e.matches("3910"));
    assert!(!e.matches("391.5 or so"));
    assert!(!e.matches("a391"));
    assert!(!e.matches(r#"{"name":"calculator","arguments":{"expression":"17*23"}}"#));
}

#[test]
fn numbers_lose_separators_and_zero_decimals() {
    assert_eq!(normalise("It is 7,006,652.00 units"), "it is 7006652 units");
    assert_eq!(normalise("2.50 and 1,23"), "2.5 and 1,23");
    assert!(expect("7006652").matches("1234 * 5678 = 7,006,652"));
    assert!(expect("\"4294967296\"").matches("2 ** 32 is 4294967296.0"));
    assert!(expect("2.5").matches("x = 2.50"));
}

#[test]
fn strings_ignore_case_whitespace_and_emphasis() {
    let e = expect("\"Paris  France\"");
    assert!(e.matches("It is in __paris__\n france."));
    assert!(!e.matches("parisfrance"));
}

#[test]
fn a_regex_searches_the_normalised_answer() {
    let e = expect(r#"{"regex": "^the result is -?5$"}"#);
    assert!(e.matches("The   result is **5**"));
    assert!(!e.matches("The result is 5, I think"));
}

#[test]
fn a_list_accepts_any_of_its_values() {
    let e = expect(r#"[12, {"regex": "twelve"}]"#);
    assert!(e.matches("12"));
    assert!(e.matches("Twelve."));
    assert!(!e.matches("13"));
}

#[test]
fn bad_expectations_and_files_are_refused_with_the_line() {
    for bad in [
        r#""""#,
        "[]",
        r#"{"regex": "("}"#,
        r#"{"regexp": "x"}"#,
        "true",
        "null",
    ] {
        assert!(serde_json::from_str::<Expect>(bad).is_err(), "{bad}");
    }
    let twice = "{\"id\":\"a\",\"query\":\"q\",\"expect\":1}\n\n{\"id\":\"a\",\"query\":\"q\",\"expect\":2}";
    let err = parse_tasks(twice).unwrap_err();
    assert!(err.contains("line 3") && err.contains("twice"), "{err}");
    let err = parse_tasks("{\"id\":\"a\",\"query\":\"q\"}").unwrap_err();
    assert!(err.contains("line 1") && err.contains("expect"), "{err}");
    assert!(parse_tasks("\n").is_err());
    let tasks = parse_tasks(
        "{\"id\":\"a\",\"query\":\"q\",\"expect\":1,\"tools_required\":[\"calculator\"]}",
    )
    .unwrap();
    assert_eq!(tasks[0].tools_required, ["calculator"]);
}
