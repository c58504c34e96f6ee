//! docs/configuration.md cannot drift from the code: every key the configuration file accepts
//! and every variable the code names must be on it. The keys are asked of the code itself:
//! each section refuses unknown keys, and serde's refusal lists the keys it would accept.

use std::collections::BTreeSet;
use std::path::Path;

use super::*;

const PAGE: &str = include_str!("../../../docs/configuration.md");

/// A key no section has, to make a section list the keys it accepts.
const PROBE: &str = "zz_not_a_key";

/// The keys a table accepts, from the error an unknown key gets there; `None` when the place
/// is not a table of named keys (a plain value, or a map of free keys such as `env`).
fn accepted(toml: &str) -> Option<Vec<String>> {
    let message = err(Some(toml), &[("OPENAI_API_KEY", "k")]);
    let list = message
        .split(&format!("unknown field `{PROBE}`, expected "))
        .nth(1)?;
    let list = list.split('\n').next()?;
    let keys = list
        .trim_start_matches("one of ")
        .split([',', ' '])
        .filter_map(|k| k.trim().strip_prefix('`')?.split('`').next())
        .map(str::to_string)
        .collect::<Vec<_>>();
    (!keys.is_empty()).then_some(keys)
}

/// Every key path of the file (`server.bind`, `models.abilities.tool_call`), found by
/// probing each table and each table inside it, as a table and as an array of tables.
fn file_keys() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut arrays: BTreeSet<String> = BTreeSet::new();
    let top = accepted(&format!("{PROBE} = 1\n")).expect("the top level lists its keys");
    let mut queue: Vec<Vec<String>> = top.into_iter().map(|k| vec![k]).collect();
    while let Some(path) = queue.pop() {
        let name = path.join(".");
        // Each enclosing array of tables needs an entry before a table can be opened in it.
        let entries: String = (1..path.len())
            .map(|i| path[..i].join("."))
            .filter(|p| arrays.contains(p))
            .map(|p| format!("[[{p}]]\n"))
            .collect();
        let table = accepted(&format!("{entries}[{name}]\n{PROBE} = 1\n"));
        let inner = table.or_else(|| {
            let keys = accepted(&format!("{entries}[[{name}]]\n{PROBE} = 1\n"))?;
            arrays.insert(name.clone());
            Some(keys)
        });
        match inner {
            Some(keys) if path.len() < 4 => {
                queue.extend(keys.into_iter().map(|k| [path.clone(), vec![k]].concat()))
            }
            _ => {
                found.insert(name);
            }
        }
    }
    found
}

/// The page's section with this heading (`[server]`, `[[models]]`, `Top level`): from its
/// `## …` line to the next one.
fn section(heading: &str) -> &'static str {
    let start = PAGE
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("docs/configuration.md has no section {heading}"));
    let rest = &PAGE[start + 4..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}

/// The section a key path belongs to — the deepest table with a heading of its own
/// (`## `[[tools.http]]``), else the top level — and the key's path below it.
fn owner(parts: &[&str]) -> (&'static str, String) {
    for i in (1..parts.len()).rev() {
        let table = parts[..i].join(".");
        for heading in [format!("`[{table}]`"), format!("`[[{table}]]`")] {
            if PAGE.contains(&format!("\n## {heading}\n")) {
                return (section(&heading), parts[i..].join("."));
            }
        }
    }
    (section("Top level"), parts.join("."))
}

#[test]
fn every_file_key_is_on_the_configuration_page() {
    let keys = file_keys();
    assert!(keys.contains("server.bind") && keys.contains("models.abilities.tool_call"));
    let missing: Vec<&String> = keys
        .iter()
        .filter(|path| {
            let parts: Vec<&str> = path.split('.').collect();
            let (text, below) = owner(&parts);
            // Named by its path below the section (`abilities.tool_call`) or by its own name.
            let own = parts[parts.len() - 1];
            !text.contains(&format!("`{below}`")) && !text.contains(&format!("`{own}`"))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "not on docs/configuration.md: {missing:?}"
    );
}

/// The variables the code names: string literals of the project's prefixes in `src/`.
fn variables() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if path.is_dir() && name != "tests" {
                dirs.push(path);
            } else if name.ends_with(".rs") && name != "tests.rs" {
                let text = std::fs::read_to_string(&path).unwrap();
                found.extend(
                    text.split('"')
                        .skip(1)
                        .step_by(2)
                        .filter(|s| is_variable(s))
                        .map(String::from),
                );
            }
        }
    }
    found
}

fn is_variable(s: &str) -> bool {
    const PREFIXES: [&str; 8] = [
        "LLM_",
        "REAGENT_",
        "REACT_",
        "DAG_",
        "CONTEXT_",
        "OPENAI_",
        "OTEL_",
        "DATABASE_",
    ];
    PREFIXES.iter().any(|p| s.starts_with(p))
        && s.len() > 5
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

#[test]
fn every_variable_is_on_the_configuration_page() {
    let vars = variables();
    assert!(
        vars.contains("LLM_BASE_URL") && vars.contains("REAGENT_BIND"),
        "{vars:?}"
    );
    let page = section("Environment variables");
    let missing: Vec<&String> = vars
        .iter()
        .filter(|v| !page.contains(&format!("`{v}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "not on docs/configuration.md: {missing:?}"
    );
}

#[test]
fn a_key_missing_from_the_page_is_noticed() {
    // The check itself must be able to fail: a section without one of its keys.
    let (server, below) = owner(&["server", "bind"]);
    assert_eq!(below, "bind");
    assert!(server.contains("`bind`"));
    assert!(!server.replace("`bind`", "").contains("`bind`"));
    assert!(file_keys().contains("server.bind"));
}
