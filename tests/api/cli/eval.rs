//! `reagent eval`: a task file run in-process from a configuration (against the fake
//! provider, whose requests show the eval's sampling settings) and against a running service
//! (`serve --demo`), judged per task, summarised as JSON and as a table, and turned into an
//! exit status by `--min-accuracy`.

use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};
use serde_json::Value;

use crate::support::child::{run, Server};

const TASKS: &str = r#"{"id": "mul", "query": "What is 17 * 23?", "expect": 391, "tools_required": ["calculator"]}
{"id": "guess", "query": "What is 17 * 24?", "expect": [408, {"regex": "four hundred"}], "tools_required": ["calculator"]}
"#;

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[tokio::test]
async fn in_process_eval_judges_each_task_fixes_sampling_and_fails_below_min_accuracy() {
    let fake = FakeOpenAi::start().await.unwrap();
    // `mul`: the calculator, then the right answer. `guess`: the right value without a tool.
    fake.push(
        FakeReply::tool_calls(vec![("c1", "calculator", r#"{"expression":"17*23"}"#)])
            .usage(100, 10),
    );
    fake.push(FakeReply::text("17 * 23 = **391**.").usage(120, 8));
    fake.push(FakeReply::text("It is 408.").usage(50, 4));
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[[models]]\nname = \"fake\"\nbase_url = \"{}\"\nsynthesis = false\ntemperature = 0.9\n",
        fake.base_url()
    );
    let config = write(dir.path(), "eval.toml", &config);
    let tasks = write(dir.path(), "tasks.jsonl", TASKS);
    let args = [
        "eval",
        &tasks,
        "--config",
        &config,
        "--mode",
        "native",
        "--json",
        "--temperature",
        "0",
        "--seed",
        "7",
        "--min-accuracy",
        "0.9",
    ];
    let out = run(dir.path(), &args, &[]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("below --min-accuracy 0.9"), "{stderr}");
    assert!(stderr.contains("eval [2/2] 1 correct"), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");
    let summary = &report["summary"];
    assert_eq!(
        (&summary["tasks"], &summary["correct"], &summary["accuracy"]),
        (&Value::from(2), &Value::from(1), &Value::from(0.5)),
        "{report}"
    );
    assert_eq!(summary["median_llm_calls"], 1.5, "{report}");
    // The calculator's result was the value, and the answer kept it; no answer is a call.
    assert_eq!(
        (
            &summary["first_result_right"],
            &summary["first_result_kept"],
            &summary["call_dumps"]
        ),
        (&Value::from(1), &Value::from(1), &Value::from(0)),
        "{report}"
    );
    let (mul, guess) = (&report["tasks"][0], &report["tasks"][1]);
    assert_eq!(mul["id"], "mul");
    assert_eq!(mul["correct"], true, "{mul}");
    assert_eq!(mul["status"], "completed");
    assert_eq!(
        (&mul["llm_calls"], &mul["tool_calls"]),
        (&2.into(), &1.into())
    );
    assert_eq!(mul["tokens"], 238, "{mul}");
    assert_eq!(
        (&mul["first_call"], &mul["first_result_correct"]),
        (
            &r#"calculator({"expression":"17*23"})"#.into(),
            &true.into()
        ),
        "{mul}"
    );
    assert_eq!(
        guess.get("first_result_correct"),
        None,
        "no tool ran: {guess}"
    );
    assert_eq!(
        guess["correct"], false,
        "a right value without the tool: {guess}"
    );
    assert_eq!(guess["missing_tools"], serde_json::json!(["calculator"]));
    // The eval's settings over the model's own, in every request.
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    for r in &requests {
        assert_eq!(r["temperature"].as_f64(), Some(0.0), "{r}");
        assert_eq!(r["seed"], 7, "{r}");
    }
}

#[tokio::test]
async fn eval_against_a_running_service_prints_a_table_and_passes_min_accuracy() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        dir.path(),
        &["serve", "--demo"],
        &[("REAGENT_BIND", "127.0.0.1:0")],
    )
    .await;
    let tasks = write(
        dir.path(),
        "tasks.jsonl",
        r#"{"id": "mul", "query": "What is 17 * 23?", "expect": "391", "tools_required": ["calculator"]}"#,
    );
    let args = ["eval", &tasks, "--url", &server.base, "--min-accuracy", "1"];
    let out = run(dir.path(), &args, &[]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("mul "))
        .expect("a row");
    let cells: Vec<&str> = row.split_whitespace().collect();
    // Two loop calls, the second's reply the answer (`synthesis = "auto"`: no third call).
    assert_eq!(&cells[1..5], ["yes", "completed", "2", "1"], "{stdout}");
    assert!(stdout.contains("accuracy 1/1 = 100.0%"), "{stdout}");

    // Sampling cannot be fixed from outside a running service: refused, not ignored.
    let args = ["eval", &tasks, "--url", &server.base, "--temperature", "0"];
    let out = run(dir.path(), &args, &[]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("pass --agent"), "{stderr}");
}

/// `reagent eval /dev/zero` (issue 51, item 6): the task file is read up to its bound, then
/// refused as a usage error. Run under a 2 GB address-space limit, so that a reader without a
/// bound fails here rather than taking the machine's memory.
#[tokio::test]
async fn an_endless_task_file_is_refused_at_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "ulimit -v 2000000 && exec {} eval /dev/zero --url http://127.0.0.1:9",
        crate::support::child::BIN
    );
    let out = tokio::process::Command::new("sh")
        .args(["-c", &script])
        .current_dir(dir.path())
        .env_clear()
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(crate::support::child::TIMEOUT, out)
        .await
        .expect("reagent eval stops reading")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("larger than 16 MiB"), "{stderr}");
}

/// Task ids and answers come from files and models: control characters in them (terminal
/// escape sequences) are shown escaped, never written raw to the terminal.
#[tokio::test]
async fn control_characters_of_task_ids_are_printed_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = write(
        dir.path(),
        "tasks.jsonl",
        "{\"id\": \"red\\u001b[31m\\u0007x\", \"query\": \"q\", \"expect\": 1}\n",
    );
    let out = run(
        dir.path(),
        &["eval", &tasks, "--url", "http://127.0.0.1:9"],
        &[],
    )
    .await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    for text in [&stdout, &stderr] {
        assert!(!text.contains(['\u{1b}', '\u{7}']), "{text:?}");
    }
    assert!(stdout.contains("red\\u{1b}[31m\\u{7}x"), "{stdout}");
    assert!(stderr.contains("red\\u{1b}[31m\\u{7}x"), "{stderr}");
}

#[tokio::test]
async fn a_bad_task_file_is_a_usage_error_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = write(
        dir.path(),
        "tasks.jsonl",
        "{\"id\": \"a\", \"query\": \"q\", \"expect\": {\"regex\": \"(\"}}\n",
    );
    let out = run(
        dir.path(),
        &["eval", &tasks, "--url", "http://127.0.0.1:9"],
        &[],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("line 1") && stderr.contains("invalid regex"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_task_past_its_timeout_is_wrong_and_its_run_is_cancelled() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.set_default(FakeReply::text("too late").delay(30_000));
    let dir = tempfile::tempdir().unwrap();
    let base_url = fake.base_url();
    let server = Server::serve(dir.path(), &[("LLM_BASE_URL", &base_url)]).await;
    let tasks = write(
        dir.path(),
        "tasks.jsonl",
        r#"{"id": "slow", "query": "What is 1 + 1?", "expect": 2}"#,
    );
    let args = [
        "eval",
        &tasks,
        "--url",
        &server.base,
        "--timeout-s",
        "1",
        "--json",
    ];
    let out = run(dir.path(), &args, &[]).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let task = &report["tasks"][0];
    assert_eq!(
        (&task["correct"], &task["status"]),
        (&false.into(), &"error".into())
    );
    assert!(
        task["error"].as_str().unwrap().contains("within 1 s"),
        "{task}"
    );
    let conversations = server.get_json("/api/conversations").await;
    let conv = conversations["items"][0]["id"]
        .as_str()
        .expect("the task's conversation");
    let conv = server.get_json(&format!("/api/conversations/{conv}")).await;
    let run_id = conv["messages"][0]["run_id"]
        .as_str()
        .expect("its run")
        .to_string();
    crate::support::eventually("the run cancelled", || {
        let server = &server;
        let run_id = &run_id;
        async move {
            let run = server.get_json(&format!("/api/runs/{run_id}")).await;
            (run["status"] == "cancelled").then_some(())
        }
    })
    .await;
}

mod bfcl;
