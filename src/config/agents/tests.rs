//! `[[agents]]` tests: parsing, the implicit agent, and errors that name the key.

use std::collections::HashMap;

use super::*;
use crate::config::{Config, ConfigError};

fn load(file: Option<&str>) -> Result<Config, ConfigError> {
    Config::load_from(file, &HashMap::new())
}

fn err(file: &str) -> String {
    match load(Some(file)) {
        Ok(c) => panic!("expected an error, got {c:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn without_agents_there_is_the_implicit_one() {
    let c = load(None).unwrap();
    assert_eq!(c.agents, vec![AgentSpec::implicit()]);
    let a = c.agent(IMPLICIT_AGENT).unwrap();
    assert!(a.model.is_none() && !a.selects_tools() && a.allows_tool("anything"));
    assert!(c.summary().contains("agents: [reagent]"));
}

#[test]
fn agents_are_parsed_with_their_globs_and_engine() {
    let file = r#"
[[models]]
name = "fast"

[[agents]]
name = "researcher"
model = "fast"
system_prompt = "Cite sources."
tools = ["http_request", "github__*"]
engine = "dag"
max_iterations = 8
description = "Looks things up"
synthesis = "never"

[[agents]]
name = "calc"
tools = []
"#;
    let c = load(Some(file)).unwrap();
    assert_eq!(c.agents.len(), 2);
    let r = c.agent("researcher").unwrap();
    assert_eq!(r.model.as_deref(), Some("fast"));
    assert_eq!(r.engine, Some(crate::domain::Engine::Dag));
    assert_eq!(r.max_iterations, Some(8));
    assert_eq!(r.synthesis, Some(crate::domain::SynthesisPolicy::Never));
    assert!(r.allows_tool("http_request") && r.allows_tool("github__create_issue"));
    assert!(!r.allows_tool("calculator") && !r.allows_tool("gitlab__x"));
    let calc = c.agent("calc").unwrap();
    assert_eq!(calc.synthesis, None, "unset: the model's setting holds");
    assert!(calc.selects_tools() && !calc.allows_tool("calculator"));
    assert!(
        c.agent(IMPLICIT_AGENT).is_none(),
        "declared agents replace the implicit one"
    );
}

#[test]
fn agent_errors_name_the_key() {
    let cases = [
        ("[[agents]]\nname = \"a b\"", "agents[0].name"),
        (
            "[[agents]]\nname = \"a\"\n[[agents]]\nname = \"a\"",
            "agents[1].name: duplicate",
        ),
        (
            "[[agents]]\nname = \"a\"\nmodel = \"nope\"",
            "agents[0].model: \"nope\" is not a configured model",
        ),
        (
            "[[agents]]\nname = \"a\"\nengine = \"fast\"",
            "for agents[0].engine: expected react, dag or auto",
        ),
        (
            "[[agents]]\nname = \"a\"\nmax_iterations = 0",
            "agents[0].max_iterations",
        ),
        (
            "[[agents]]\nname = \"a\"\ntools = [\"ok\", \"[bad\"]",
            "agents[0].tools[1]: bad glob",
        ),
        (
            "[[agents]]\nname = \"a\"\ntools = [\"\"]",
            "agents[0].tools[0]",
        ),
        (
            "[[agents]]\nname = \"a\"\ntop_k = 1",
            "unknown field `top_k`",
        ),
        (
            "[[agents]]\nname = \"a\"\ntemperature = 2.5",
            "invalid value 2.5 for agents[0].temperature: expected a number from 0 to 2",
        ),
        (
            "[[agents]]\nname = \"a\"\ntop_p = 0",
            "invalid value 0.0 for agents[0].top_p: expected a number greater than 0 and at most 1",
        ),
        ("[[agents]]\nname = \"a\"\nseed = -1", "seed"),
    ];
    for (file, expected) in cases {
        let e = err(file);
        assert!(e.contains(expected), "{file}: {e}");
    }
}

const BUILTINS: [&str; 3] = ["calculator", "current_time", "http_request"];

fn check(file: &str) -> Result<(), ConfigError> {
    load(Some(file)).unwrap().check_agent_tools(&BUILTINS)
}

#[test]
fn a_tool_entry_that_matches_nothing_names_the_agent_and_the_nearest_tool() {
    let e = check("[[agents]]\nname = \"maths\"\ntools = [\"current_time\", \"calculater\"]")
        .unwrap_err();
    assert_eq!(e.key(), Some("agents[0].tools[1]"));
    let e = e.to_string();
    assert!(
        e.contains("agent \"maths\"")
            && e.contains("\"calculater\" matches no tool")
            && e.contains("did you mean \"calculator\"?"),
        "{e}"
    );
    let e = check("[[agents]]\nname = \"a\"\ntools = [\"web_*\"]")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"web_*\" matches no tool") && e.contains("<server>__<tool>"),
        "{e}"
    );
}

#[test]
fn mcp_entries_are_checked_by_their_server_prefix_only() {
    let mcp = "[[mcp]]\nname = \"github\"\ncommand = \"github-mcp\"\n\n";
    let ok = [
        "tools = [\"github__*\"]",
        "tools = [\"github__create_issue\", \"calc*\"]",
        "tools = [\"*__search\"]",
        "tools = []",
    ];
    for tools in ok {
        let file = format!("{mcp}[[agents]]\nname = \"a\"\n{tools}");
        assert!(check(&file).is_ok(), "{tools}: {:?}", check(&file));
    }
    let file = format!("{mcp}[[agents]]\nname = \"a\"\ntools = [\"gihub__*\"]");
    let e = check(&file).unwrap_err().to_string();
    assert!(e.contains("did you mean \"github__*\"?"), "{e}");
    let e = check("[[agents]]\nname = \"a\"\ntools = [\"github__*\"]")
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"github__*\" matches no tool"), "{e}");
}

#[test]
fn an_agents_sampling_settings_are_parsed() {
    let c = load(Some(
        "[[agents]]\nname = \"a\"\ntemperature = 0.1\ntop_p = 1\nseed = 18446744073709551\n\n\
         [[agents]]\nname = \"b\"",
    ))
    .unwrap();
    let a = c.agent("a").unwrap().sampling;
    assert_eq!(
        (a.temperature, a.top_p, a.seed),
        (Some(0.1), Some(1.0), Some(18_446_744_073_709_551))
    );
    assert!(c.agent("b").unwrap().sampling.is_empty());
}
