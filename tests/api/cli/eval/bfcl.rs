//! `reagent eval --bfcl`: BFCL's entries through reagent, with a fake bridge in place of
//! `evals/bfcl/bridge.py` (the real one needs `bfcl-eval`; its conversions have their own
//! check in evals/bfcl/test_bridge.py). The fake logs every request, so the test sees what
//! reagent handed to BFCL's executor and checker.

use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};
use serde_json::{json, Value};

use crate::support::child::run;

/// A bridge answering from fixture entries: one single-turn, one multi-turn of two turns.
const FAKE_BRIDGE: &str = r#"
import json, sys
log = open(sys.argv[0] + ".log", "a")
entries = [
    {"id": "simple_python_0", "category": "simple_python", "multi_turn": False,
     "turns": ["Area of a triangle, base 10, height 5?"],
     "tools": [{"type": "function", "function": {"name": "calc_area", "description": "Area",
                "parameters": {"type": "object", "properties": {"base": {"type": "integer"}}}}}]},
    {"id": "multi_turn_base_0", "category": "multi_turn_base", "multi_turn": True,
     "turns": ["Go to document.", "List it."],
     "tools": [{"type": "function", "function": {"name": n, "description": n,
                "parameters": {"type": "object", "properties": {}}}} for n in ("cd", "ls")]},
]
for line in sys.stdin:
    req = json.loads(line)
    log.write(line)
    log.flush()
    if req["op"] == "load":
        answer = {"entries": entries[: req["limit"] * 2]}
    elif req["op"] == "execute":
        answer = {"outputs": ["out of " + c["name"] for c in req["calls"]]}
    else:
        valid = req["id"] == "simple_python_0"
        answer = {"valid": valid, "reason": None if valid else "wrong state"}
    print(json.dumps(answer), flush=True)
"#;

fn python3() -> std::path::PathBuf {
    let path = std::env::var_os("PATH").expect("PATH");
    std::env::split_paths(&path)
        .map(|d| d.join("python3"))
        .find(|p| p.exists())
        .expect("python3 on PATH")
}

/// Writes the fake bridge and a `python` that runs it whatever script it is given.
fn fake_python(dir: &std::path::Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("fake_bridge.py");
    std::fs::write(&script, FAKE_BRIDGE).unwrap();
    let python = dir.join("python");
    let wrapper = format!(
        "#!/bin/sh\nexec {} {}\n",
        python3().display(),
        script.display()
    );
    std::fs::write(&python, wrapper).unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    python.display().to_string()
}

#[tokio::test]
async fn bfcl_entries_run_as_caller_tools_and_their_calls_go_to_the_checker() {
    let fake = FakeOpenAi::start().await.unwrap();
    script_the_model(&fake);
    let dir = tempfile::tempdir().unwrap();
    let report = run_the_eval(dir.path(), &fake).await;
    the_report_scores_both_entries(&report);
    let log = std::fs::read_to_string(dir.path().join("fake_bridge.py.log")).unwrap();
    the_bridge_was_asked_to_load_execute_and_score(&log);
    the_model_was_offered_the_tools_and_shown_the_outputs(&fake.requests());
}

/// The model's replies for both entries, in the order the eval asks for them.
fn script_the_model(fake: &FakeOpenAi) {
    // simple_python_0: one reply with the call, which is the output.
    fake.push(FakeReply::tool_calls(vec![(
        "a1",
        "calc_area",
        r#"{"base":10}"#,
    )]));
    // multi_turn_base_0: turn 1 calls cd and answers; turn 2 calls ls and answers.
    fake.push(FakeReply::tool_calls(vec![(
        "b1",
        "cd",
        r#"{"folder":"document"}"#,
    )]));
    fake.push(FakeReply::text("In document."));
    fake.push(FakeReply::tool_calls(vec![("b2", "ls", "{}")]));
    fake.push(FakeReply::text("Listed."));
}

/// Runs `reagent eval --bfcl` in `dir` against the fake model and bridge; its JSON report.
async fn run_the_eval(dir: &std::path::Path, fake: &FakeOpenAi) -> Value {
    let config = format!(
        "[[models]]\nname = \"fake\"\nbase_url = \"{}\"\nsynthesis = false\n\
         [[agents]]\nname = \"bfcl\"\ntools = []\n",
        fake.base_url()
    );
    std::fs::write(dir.join("eval.toml"), config).unwrap();
    let python = fake_python(dir);
    let args = [
        "eval",
        "--bfcl",
        "simple_python,multi_turn_base",
        "--bfcl-limit",
        "1",
        "--bfcl-python",
        &python,
        "--config",
        "eval.toml",
        "--agent",
        "bfcl",
        "--mode",
        "native",
        "--json",
    ];
    let out = run(dir, &args, &[]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    serde_json::from_slice(&out.stdout).expect("--json prints JSON")
}

/// The single-turn entry is correct, the multi-turn one wrong by the checker's word.
fn the_report_scores_both_entries(report: &Value) {
    let (single, multi) = (&report["tasks"][0], &report["tasks"][1]);
    assert_eq!(
        (
            &single["id"],
            &single["correct"],
            &single["category"],
            &single["status"]
        ),
        (
            &json!("simple_python_0"),
            &json!(true),
            &json!("simple_python"),
            &json!("requires_action")
        ),
        "{report}"
    );
    assert_eq!(single["answer"], r#"calc_area({"base":10})"#);
    assert_eq!(
        (
            &multi["correct"],
            &multi["checker"],
            &multi["llm_calls"],
            &multi["tool_calls"]
        ),
        (&json!(false), &json!("wrong state"), &json!(4), &json!(2)),
        "{report}"
    );
    let categories = &report["summary"]["categories"];
    assert_eq!(categories[0]["correct"], 1, "{report}");
    assert_eq!(categories[1]["category"], "multi_turn_base", "{report}");
}

/// What the bridge was asked: the first N of each category, the multi-turn calls to execute,
/// and each entry's replies for the checker.
fn the_bridge_was_asked_to_load_execute_and_score(log: &str) {
    let requests: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ops: Vec<&str> = requests.iter().map(|r| r["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["load", "score", "execute", "execute", "score"]);
    assert_eq!(requests[0]["limit"], 1);
    assert_eq!(requests[2]["calls"][0]["name"], "cd");
    let call = |name: &str, args: &str| (name.to_string(), args.to_string());
    let replies = |turn: &Value| -> Vec<Value> { turn.as_array().unwrap().clone() };
    let single_turns = &requests[1]["turns"];
    assert_eq!(single_turns.as_array().unwrap().len(), 1);
    let first = &replies(&single_turns[0])[0]["calls"][0];
    assert_eq!(
        (
            first["name"].as_str().unwrap().to_string(),
            first["arguments"].as_str().unwrap().to_string()
        ),
        call("calc_area", r#"{"base":10}"#)
    );
    let multi_turns = &requests[4]["turns"];
    assert_eq!(replies(&multi_turns[0])[0]["calls"][0]["name"], "cd");
    assert_eq!(replies(&multi_turns[0])[1], json!({"text": "In document."}));
    assert_eq!(replies(&multi_turns[1])[0]["calls"][0]["name"], "ls");
    assert_eq!(replies(&multi_turns[1])[1], json!({"text": "Listed."}));
}

/// What the model was offered and shown: the entry's functions as tools, the executed output
/// as the call's result, and turn 1 still in the conversation at turn 2.
fn the_model_was_offered_the_tools_and_shown_the_outputs(requests: &[Value]) {
    assert_eq!(requests.len(), 5);
    let tools = |r: &Value| -> Vec<String> {
        r["tools"].as_array().map_or(Vec::new(), |t| {
            t.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
    };
    assert_eq!(tools(&requests[0]), ["calc_area"]);
    assert_eq!(tools(&requests[1]), ["cd", "ls"]);
    let text = |r: &Value| r["messages"].to_string();
    assert!(
        text(&requests[2]).contains("out of cd"),
        "{}",
        text(&requests[2])
    );
    assert!(
        text(&requests[3]).contains("Go to document."),
        "{}",
        text(&requests[3])
    );
    assert!(
        text(&requests[4]).contains("out of ls"),
        "{}",
        text(&requests[4])
    );
}

#[tokio::test]
async fn an_unknown_category_or_a_missing_python_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["eval", "--bfcl", "java", "--url", "http://127.0.0.1:9"],
        &[],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--bfcl java") && stderr.contains("simple_python"),
        "{stderr}"
    );
    let args = [
        "eval",
        "--bfcl",
        "multiple",
        "--bfcl-python",
        "/nowhere/python",
        "--url",
        "http://127.0.0.1:9",
    ];
    let out = run(dir.path(), &args, &[]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("scripts/bfcl.sh setup"), "{stderr}");
}
