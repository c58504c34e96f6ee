use super::*;

fn expect(json: &str) -> Expect {
    serde_json::from_str(json).unwrap()
}

#[test]
fn a_number_must_be_the_answers_last_number() {
    let e = expect("391");
    assert!(e.matches("17 * 23 = **391**."));
    assert!(e.matches("The answer is 391"));
    assert!(e.matches("48 * 73 = 3504; 3504 - 1999 = 1505; so 391"));
    // Near misses: inside a longer number or word, another number last, no number at all.
    assert!(!e.matches("3910"));
    assert!(!e.matches("391.5 or so"));
    assert!(!e.matches("a391"));
    assert!(!e.matches("the 391st"));
    assert!(!e.matches("391 or 3910"));
    // The rule's price: working-out written after the result is read as the answer.
    assert!(!e.matches("It is 391 (17 * 23)"));
    assert!(!e.matches("three hundred ninety-one"));
}

#[test]
fn a_list_of_tool_results_counts_only_by_its_last_number() {
    let e = expect("7006652");
    let junk_last = "Here is what the tools returned:\n- calculator: 7006652\n- \
                     everything__get-sum: The sum of 1234 and 5678 is 6912.";
    assert!(!e.matches(junk_last));
    let value_last = "Here is what the tools returned:\n- everything__get-sum: The sum of 1234 \
                      and 5678 is 6912.\n- calculator: 7006652";
    assert!(e.matches(value_last));
}

#[test]
fn list_numbering_is_not_a_number_of_the_answer() {
    let steps = "Here is what the tools returned:\n- calculator: 391\n\nSteps taken:\n\
                 1. calculator — succeeded\n2. everything__get-sum — failed";
    assert!(expect("391").matches(steps));
    assert!(expect("1505").matches("1. 48 * 73 = 3504\n2) 3504 - 1999 = 1505"));
    // Only at the start of a line: "step 2." mid-sentence is a number of the answer.
    assert!(!expect("391").matches("391 was found in step 2. Done"));
}

#[test]
fn numbers_compare_as_numbers() {
    assert!(expect("7006652").matches("1234 * 5678 = 7,006,652"));
    assert!(expect("\"4294967296\"").matches("2 ** 32 is 4294967296.0"));
    assert!(expect("54.25").matches("Your change is $54.250."));
    assert!(expect("0.3").matches("0.1 + 0.2 = 0.30000000000000004"));
    assert!(!expect("54.25").matches("about 54.2"));
    assert!(!expect("54.25").matches("5425"));
    assert!(expect("-5").matches("x = -5"));
    assert!(expect("5").matches("10 - 5"));
    assert!(!expect("-5").matches("10 - 5"));
    assert!(!expect("-5").matches("10-5"));
}

#[test]
fn a_tool_call_dump_is_never_correct() {
    for dump in [
        r#"{"name": "calculator", "arguments": {"expression": "391"}}"#,
        "{\"name\": \"calculator\", \"arguments\": {\"expression\": \"391\"}}\n\
         {\"name\": \"current_time\", \"arguments\": {}}",
        "Markdown: ```json {\"type\": \"tool_call\", \"tool_name\": \"calculator\", \
         \"tool_args\": {\"expression\": \"391\"}}```",
        "{\"name\": \"calculator\", \"arguments\": {\"expression\": \"391",
    ] {
        for e in [
            expect("391"),
            expect(r#""calculator""#),
            expect(r#"{"regex": "391"}"#),
            expect(r#"[391, "calculator"]"#),
        ] {
            assert!(!e.matches(dump), "{e:?} on {dump}");
        }
    }
    // Data with a name, and a JSON-mode final answer, are answers.
    assert!(expect("391").matches(r#"{"name": "result", "value": 391}"#));
    assert!(expect("391").matches(r#"{"type": "final_answer", "answer": "391"}"#));
}

#[test]
fn the_numbers_of_a_quoted_call_are_not_the_answer() {
    let e = expect("391");
    assert!(!e.matches(
        "Let me compute it: {\"name\": \"calculator\", \"arguments\": {\"expression\": \"391\"}}"
    ));
    assert!(!e.matches("Sure: {\"name\": \"calculator\", \"arguments\": {\"expression\": \"391"));
    assert!(e.matches(
        "The result is 391. I called {\"name\": \"calculator\", \"arguments\": {\"expression\": \"17*23\"}}"
    ));
}

#[test]
fn numbers_lose_separators_and_zero_decimals() {
    assert_eq!(normalise("It is 7,006,652.00 units"), "it is 7006652 units");
    assert_eq!(normalise("2.50 and 1,23"), "2.5 and 1,23");
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
    // Unlike a number, a regex may match anywhere: c20's area and perimeter in either order.
    let e = expect(r#"{"regex": "(?s)\\b840\\b.*\\b119\\.8\\b|\\b119\\.8\\b.*\\b840\\b"}"#);
    assert!(e.matches("Perimeter 119.8 m, area 840 m2."));
    assert!(!e.matches("Area 8400, perimeter 119.8"));
}

#[test]
fn a_string_that_is_not_a_number_matches_as_a_token() {
    let e = expect(r#""09:00""#);
    assert!(e.matches("In Tokyo it is 09:00 now, 3 hours ahead."));
    assert!(!e.matches("It is 19:00"));
}

#[test]
fn a_list_accepts_any_of_its_values() {
    let e = expect(r#"[12, {"regex": "twelve"}]"#);
    assert!(e.matches("12"));
    assert!(e.matches("Twelve."));
    assert!(!e.matches("13"));
    // Each element keeps its own rule: 12 is not the last number here.
    assert!(!e.matches("12 or 13"));
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
