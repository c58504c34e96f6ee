//! Hostile model replies against the real binary, as bounded measurements (issue 37, items 5
//! and 9): a model that answers every call with 10,000 tool calls (before: 500,000 executions,
//! 1,000,108 events, 1.75 GB peak RSS), one call with 15 MB of arguments (before: 532 MB peak)
//! and a plan of 100,000 steps (before: 354 MB peak). Each test prints the server's peak RSS growth (`VmHWM` after − before) and asserts it
//! under a stated bound.

use super::*;

const MB: u64 = 1024 * 1024;

#[tokio::test]
async fn a_model_that_always_answers_10000_tool_calls_costs_bounded_memory_and_events() {
    const PEAK_GROWTH_BOUND: u64 = 64 * MB;
    let (dir, db_url) = workdir();
    let llm = FakeOpenAi::start().await.unwrap();
    let calls = |reply: usize| -> Vec<(String, String, String)> {
        (0..10_000)
            .map(|i| {
                let args = format!(r#"{{"expression":"{i}+{reply}"}}"#);
                (format!("call_{i}"), "calculator".to_string(), args)
            })
            .collect()
    };
    // Every loop call (and the synthesis) gets 10,000 calls, new ones each time (the same ones
    // again would be a cycle, which the cycle stop ends before the tool-call limit). The loop's
    // calls stream (`synthesis = "auto"`): each call's arguments in one piece, so that the SSE
    // framing stays under the 16 MiB response cap as a provider's larger chunks would.
    let reply = |n| FakeReply::tool_calls(calls(n)).chunk_chars(1 << 20);
    for n in 1..=10 {
        llm.push(reply(n));
    }
    llm.set_default(reply(0));
    let server = start(dir.path(), &db_url, &llm).await;
    let before = server.status_bytes("VmHWM");
    let (_, run) = server.start_run("add up everything").await;
    let shown = finished(&server, &run).await;
    let after = server.status_bytes("VmHWM");
    let growth = after.saturating_sub(before);
    eprintln!(
        "10,000-call replies: peak RSS {} MB -> {} MB (+{} MB); run {shown}",
        before / MB,
        after / MB,
        growth / MB
    );
    assert_eq!(shown["status"], "completed", "{shown}");
    assert_eq!(shown["tool_calls"], 200, "the run's tool-call limit");
    let replay = reqwest::get(server.url(&format!("/api/runs/{run}/events")))
        .await
        .unwrap();
    let events = read_all(replay).await;
    eprintln!("10,000-call replies: {} events", events.len());
    assert!(events.len() < 600, "{} events", events.len());
    assert!(
        events.iter().any(|e| e.data["type"] == "limit"),
        "a limit event says why the run stopped calling tools"
    );
    assert!(growth < PEAK_GROWTH_BOUND, "peak RSS grew {growth} bytes");
}

#[tokio::test]
async fn a_tool_call_with_15_mb_of_arguments_costs_bounded_memory() {
    const PEAK_GROWTH_BOUND: u64 = 128 * MB;
    let (dir, db_url) = workdir();
    let llm = FakeOpenAi::start().await.unwrap();
    let args = format!(r#"{{"expression":"{}"}}"#, "1".repeat(15_000_000));
    // Streamed (`synthesis = "auto"`) in 1 MiB pieces: the framing of tiny chunks would pass the
    // 16 MiB response cap.
    llm.push(FakeReply::tool_calls(vec![("c1", "calculator", args)]).chunk_chars(1 << 20));
    llm.set_default(FakeReply::text("done"));
    let server = start(dir.path(), &db_url, &llm).await;
    let before = server.status_bytes("VmHWM");
    let (_, run) = server.start_run("compute").await;
    let shown = finished(&server, &run).await;
    let after = server.status_bytes("VmHWM");
    let growth = after.saturating_sub(before);
    eprintln!(
        "15 MB of arguments: peak RSS {} MB -> {} MB (+{} MB)",
        before / MB,
        after / MB,
        growth / MB
    );
    assert_eq!(shown["status"], "completed", "{shown}");
    assert_eq!(shown["tool_calls"], 1);
    assert!(growth < PEAK_GROWTH_BOUND, "peak RSS grew {growth} bytes");
}

#[tokio::test]
async fn a_plan_of_100000_steps_costs_bounded_memory() {
    const PEAK_GROWTH_BOUND: u64 = 128 * MB;
    let (dir, db_url) = workdir();
    let llm = FakeOpenAi::start().await.unwrap();
    let steps: Vec<Value> = (0..100_000)
        .map(|i| json!({"id": format!("s{i}"), "task": "look it up", "dependencies": []}))
        .collect();
    let plan = json!({ "steps": steps }).to_string();
    // Every level of the planner's structured call gets the plan, too large to read: the run
    // falls back to one step.
    for _ in 0..5 {
        llm.push(FakeReply::tool_calls(vec![(
            "p",
            "create_plan",
            plan.clone(),
        )]));
    }
    llm.set_default(FakeReply::text("done"));
    let server = start_with(
        dir.path(),
        &db_url,
        &llm,
        &[("REAGENT_DEFAULT_ENGINE", "dag")],
    )
    .await;
    let before = server.status_bytes("VmHWM");
    let (_, run) = server.start_run("plan a lot").await;
    let shown = finished(&server, &run).await;
    let after = server.status_bytes("VmHWM");
    let growth = after.saturating_sub(before);
    eprintln!(
        "100,000-step plan: peak RSS {} MB -> {} MB (+{} MB)",
        before / MB,
        after / MB,
        growth / MB
    );
    assert_eq!(shown["status"], "completed", "{shown}");
    let replay = reqwest::get(server.url(&format!("/api/runs/{run}/events")))
        .await
        .unwrap();
    let plans: Vec<Value> = read_all(replay)
        .await
        .into_iter()
        .filter(|e| e.data["type"] == "plan")
        .map(|e| e.data)
        .collect();
    assert!(!plans.is_empty());
    for plan in &plans {
        assert_eq!(
            plan["steps"].as_array().unwrap().len(),
            1,
            "the fallback: {plan}"
        );
    }
    assert!(growth < PEAK_GROWTH_BOUND, "peak RSS grew {growth} bytes");
}
