use super::resolve;

const TOOLS: [&str; 4] = [
    "calculator",
    "current_time",
    "demo__lookup",
    "files__read-file",
];

#[test]
fn exact_names_resolve_to_themselves() {
    for name in TOOLS {
        assert_eq!(resolve(&TOOLS, name), Some(name));
    }
}

#[test]
fn case_and_dash_or_underscore_variants_resolve() {
    assert_eq!(resolve(&TOOLS, "Calculator"), Some("calculator"));
    assert_eq!(resolve(&TOOLS, "current-time"), Some("current_time"));
    assert_eq!(resolve(&TOOLS, "CURRENT_TIME"), Some("current_time"));
    assert_eq!(resolve(&TOOLS, "Demo__Lookup"), Some("demo__lookup"));
    assert_eq!(
        resolve(&TOOLS, "files__read_file"),
        Some("files__read-file")
    );
}

#[test]
fn a_bare_mcp_name_resolves_to_its_one_tool() {
    assert_eq!(resolve(&TOOLS, "lookup"), Some("demo__lookup"));
    assert_eq!(resolve(&TOOLS, "Read_File"), Some("files__read-file"));
}

#[test]
fn unknown_and_ambiguous_names_do_not_resolve() {
    assert_eq!(resolve(&TOOLS, "web_search"), None);
    assert_eq!(resolve(&TOOLS, "calc"), None);
    assert_eq!(resolve(&TOOLS, "time"), None);
    assert_eq!(resolve(&TOOLS, ""), None);
    // Two servers with a `lookup`: the bare name could be either.
    let two = ["a__lookup", "b__lookup"];
    assert_eq!(resolve(&two, "lookup"), None);
    assert_eq!(resolve(&two, "b__lookup"), Some("b__lookup"));
    // Two tools that differ only in case: a third spelling is ambiguous.
    let cased = ["Lookup", "lookup"];
    assert_eq!(resolve(&cased, "LOOKUP"), None);
}

#[test]
fn a_schema_title_names_its_tool() {
    // Qwen2.5-Coder-0.5B copies `<tool>Arguments`, the title of the tool's argument schema.
    assert_eq!(resolve(&TOOLS, "calculatorArguments"), Some("calculator"));
    assert_eq!(resolve(&TOOLS, "lookupArguments"), Some("demo__lookup"));
    assert_eq!(resolve(&TOOLS, "Arguments"), None);
    assert_eq!(resolve(&TOOLS, "web_searchArguments"), None);
    // A tool whose own name ends so is itself.
    let own = ["readArguments", "read"];
    assert_eq!(resolve(&own, "readArguments"), Some("readArguments"));
}
