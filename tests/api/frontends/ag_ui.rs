//! `@ag-ui/client`'s HttpAgent against `POST /ag-ui/{agent}`: every stream passes its event
//! verification (a violation makes `runAgent` throw, reported as `error`).

use reagent::llm::{LlmError, ToolCall};
use reagent::testing::scripted::{response, Turn};
use serde_json::{json, Value};

use super::{app, node, pairs, steps, stored, ALICE};

fn types(run: &Value) -> Vec<String> {
    run["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect()
}

fn of_type<'a>(run: &'a Value, kind: &str) -> Vec<&'a Value> {
    run["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == kind)
        .collect()
}

fn text(run: &Value) -> String {
    of_type(run, "TEXT_MESSAGE_CONTENT")
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect()
}

fn assert_clean(run: &Value) {
    assert!(
        run.get("error").is_none(),
        "the client refused the stream: {run}"
    );
    let t = types(run);
    assert_eq!(t.first().map(String::as_str), Some("RUN_STARTED"), "{t:?}");
}

fn stream(chunks: &[&str]) -> Turn {
    Turn::Stream(chunks.iter().map(|c| c.to_string()).collect(), None)
}

fn tool_reply(reasoning: &str, id: &str, name: &str, args: &str) -> Turn {
    let call = ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    };
    Turn::Reply(response(reasoning, vec![call]), std::time::Duration::ZERO)
}

#[tokio::test]
async fn a_tool_run_then_a_second_run_with_the_whole_history_resent_replays_nothing() {
    let app = app().await;
    app.llm.push(tool_reply(
        "Looking it up.",
        "c1",
        "echo",
        r#"{"text":"hi"}"#,
    ));
    app.llm.text("brief one");
    app.llm.push_stream(stream(&["Answer ", "one."]));
    app.llm.text("brief two");
    app.llm.push_stream(stream(&["Answer two."]));
    let plan = steps(json!([
        {"user": "first question", "state": {"n": 1},
         "context": [{"description": "page", "value": "settings"}]},
        {"user": "second question"},
    ]));
    let seen = node(
        "ag_ui_client.mjs",
        &[app.url("/ag-ui/helper"), ALICE.into(), plan],
    )
    .await;
    let (first, second) = (&seen["runs"][0], &seen["runs"][1]);
    assert_clean(first);
    assert_clean(second);
    assert_eq!(
        types(first),
        [
            "RUN_STARTED",
            "CUSTOM",
            "REASONING_START",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END",
            "REASONING_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ]
    );
    let started = &of_type(first, "RUN_STARTED")[0];
    assert_eq!(started["threadId"], seen["threadId"]);
    assert_eq!(started["input"]["state"], json!({"n": 1}));
    assert_eq!(started["input"]["forwardedProps"], json!({"from": "node"}));
    assert_eq!(
        of_type(first, "REASONING_MESSAGE_CONTENT")[0]["delta"],
        "Looking it up."
    );
    let call = &of_type(first, "TOOL_CALL_START")[0];
    assert_eq!(call["toolCallName"], "echo");
    let result = &of_type(first, "TOOL_CALL_RESULT")[0];
    assert_eq!(result["toolCallId"], call["toolCallId"]);
    assert!(
        result["content"].as_str().unwrap().contains("hi"),
        "{result}"
    );
    assert_eq!(text(first), "Answer one.");
    assert_eq!(
        of_type(first, "RUN_FINISHED")[0]["outcome"]["type"],
        "success"
    );
    assert_eq!(text(second), "Answer two.");
    // The client built its history from the events (tool call, result, answers) and resent it
    // whole: each run stored exactly one new query, and the model saw each turn once.
    let thread = seen["threadId"].as_str().unwrap();
    assert_eq!(
        stored(&app, thread).await,
        pairs(&[
            ("user", "first question"),
            ("assistant", "Answer one."),
            ("user", "second question"),
            ("assistant", "Answer two."),
        ])
    );
    let requests = app.llm.chat_requests();
    let last = requests.last().unwrap();
    let sent = serde_json::to_string(&last.messages).unwrap();
    assert_eq!(sent.matches("first question").count(), 1, "{sent}");
    assert_eq!(sent.matches("Answer one.").count(), 1, "{sent}");
    // `context` is a section of the first run's system prompt, and of that run only.
    let section = "Context from the application:\n- page: settings";
    let system = |r: &reagent::llm::ChatRequest| r.messages[0].content.clone();
    assert!(system(&requests[0]).contains(section), "{:?}", requests[0]);
    assert!(!sent.contains("page: settings"), "{sent}");
}

#[tokio::test]
async fn an_approval_interrupts_the_run_and_resume_approves_or_rejects_it() {
    let app = app().await;
    app.llm
        .push(tool_reply("", "d1", "deploy", r#"{"env":"prod"}"#));
    app.llm.text("brief");
    app.llm.push_stream(stream(&["Deployed."]));
    app.llm
        .push(tool_reply("", "d2", "deploy", r#"{"env":"staging"}"#));
    app.llm.text("brief");
    app.llm.push_stream(stream(&["Not deployed."]));
    let plan = steps(json!([
        {"user": "deploy prod"}, {"resume": "approve"},
        {"user": "deploy staging"}, {"resume": "reject"},
    ]));
    let seen = node(
        "ag_ui_client.mjs",
        &[app.url("/ag-ui/helper"), ALICE.into(), plan],
    )
    .await;
    let runs = seen["runs"].as_array().unwrap();
    for run in runs {
        assert_clean(run);
    }
    for (asked, resumed, result, answer) in [
        (&runs[0], &runs[1], "deployed to \"prod\"", "Deployed."),
        (
            &runs[2],
            &runs[3],
            "rejected by a reviewer",
            "Not deployed.",
        ),
    ] {
        // The interrupt is RUN_FINISHED's outcome, naming the waiting call; never a CUSTOM event.
        let finished = of_type(asked, "RUN_FINISHED");
        let interrupt = &finished[0]["outcome"]["interrupts"][0];
        assert_eq!(finished[0]["outcome"]["type"], "interrupt");
        assert_eq!(interrupt["reason"], "tool_approval");
        let call = &of_type(asked, "TOOL_CALL_START")[0];
        assert_eq!(interrupt["toolCallId"], call["toolCallId"]);
        assert_eq!(asked["pending"].as_array().unwrap().len(), 1);
        assert!(of_type(asked, "TEXT_MESSAGE_START").is_empty());
        // The resumed stream goes on from the approval: the call's result, then the answer.
        let got = &of_type(resumed, "TOOL_CALL_RESULT")[0];
        assert_eq!(got["toolCallId"], call["toolCallId"]);
        assert!(got["content"].as_str().unwrap().contains(result), "{got}");
        assert_eq!(text(resumed), answer);
        assert_eq!(
            of_type(resumed, "RUN_FINISHED")[0]["outcome"]["type"],
            "success"
        );
        assert_eq!(resumed["pending"], json!([]));
    }
    let thread = seen["threadId"].as_str().unwrap();
    let queries: Vec<String> = stored(&app, thread)
        .await
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, c)| c)
        .collect();
    assert_eq!(queries, ["deploy prod", "deploy staging"]);
}

#[tokio::test]
async fn a_failed_run_ends_with_run_error_and_no_run_finished() {
    let app = app().await;
    app.llm.push(Turn::Fail(LlmError::Status {
        status: 401,
        body: "bad key".into(),
    }));
    let plan = steps(json!([{"user": "hello"}]));
    let seen = node(
        "ag_ui_client.mjs",
        &[app.url("/ag-ui/helper"), ALICE.into(), plan],
    )
    .await;
    let run = &seen["runs"][0];
    let t = types(run);
    assert_eq!(t.first().map(String::as_str), Some("RUN_STARTED"));
    assert_eq!(t.last().map(String::as_str), Some("RUN_ERROR"), "{t:?}");
    assert!(!t.iter().any(|t| t == "RUN_FINISHED"), "{t:?}");
    assert!(of_type(run, "RUN_ERROR")[0]["message"]
        .as_str()
        .unwrap()
        .contains("401"));
}

#[tokio::test]
async fn a_dag_run_streams_its_steps_and_plan_as_state() {
    let app = app().await;
    app.llm
        .text(r#"{"steps": [{"id": "s1", "task": "say hi", "dependencies": []}]}"#);
    app.llm.text("hi there");
    app.llm
        .text(r#"{"achieved": true, "confidence": 0.9, "reasoning": "done"}"#);
    app.llm.push_stream(stream(&["Planned answer."]));
    let plan = steps(json!([{"user": "plan it"}]));
    let seen = node(
        "ag_ui_client.mjs",
        &[app.url("/ag-ui/planner"), ALICE.into(), plan],
    )
    .await;
    let run = &seen["runs"][0];
    assert_clean(run);
    let t = types(run);
    let started = t
        .iter()
        .position(|t| t == "STEP_STARTED")
        .expect("STEP_STARTED");
    let finished = t
        .iter()
        .position(|t| t == "STEP_FINISHED")
        .expect("STEP_FINISHED");
    assert!(started < finished, "{t:?}");
    assert_eq!(of_type(run, "STEP_STARTED")[0]["stepName"], "s1");
    let snapshot = &of_type(run, "STATE_SNAPSHOT").last().unwrap()["snapshot"];
    assert_eq!(
        snapshot["dag"]["steps"][0]["status"], "completed",
        "{snapshot}"
    );
    // The client's state is the last snapshot.
    assert_eq!(seen["state"], *snapshot);
    assert_eq!(t.last().map(String::as_str), Some("RUN_FINISHED"));
}

#[tokio::test]
async fn a_frontend_tool_is_an_interrupt_answered_by_a_tool_message() {
    let app = app().await;
    app.llm
        .push(tool_reply("", "f1", "pick_color", r#"{"of":"sky"}"#));
    app.llm.text("brief");
    app.llm.push_stream(stream(&["The sky is blue."]));
    let tools = json!([{"name": "pick_color", "description": "Asks the user for a color",
                        "parameters": {"type": "object", "properties": {"of": {"type": "string"}}}}]);
    let plan = steps(json!([
        {"user": "what color?", "tools": tools},
        {"toolOutput": "blue", "tools": tools},
    ]));
    let seen = node(
        "ag_ui_client.mjs",
        &[app.url("/ag-ui/helper"), ALICE.into(), plan],
    )
    .await;
    let (asked, answered) = (&seen["runs"][0], &seen["runs"][1]);
    assert_clean(asked);
    assert_clean(answered);
    let call = &of_type(asked, "TOOL_CALL_START")[0];
    assert_eq!(call["toolCallName"], "pick_color");
    assert_eq!(call["toolCallId"], "f1");
    let outcome = &of_type(asked, "RUN_FINISHED")[0]["outcome"];
    assert_eq!(outcome["type"], "interrupt");
    assert_eq!(outcome["interrupts"][0]["reason"], "tool_call");
    assert_eq!(outcome["interrupts"][0]["toolCallId"], "f1");
    assert_eq!(text(answered), "The sky is blue.");
    assert_eq!(
        of_type(answered, "RUN_FINISHED")[0]["outcome"]["type"],
        "success"
    );
    assert_eq!(answered["pending"], json!([]));
    // The model got the client's output as the call's result; the question is stored once.
    let last = app.llm.chat_requests().pop().unwrap();
    let sent = serde_json::to_string(&last.messages).unwrap();
    assert!(sent.contains("blue"), "{sent}");
    let thread = seen["threadId"].as_str().unwrap();
    let queries: Vec<String> = stored(&app, thread)
        .await
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, c)| c)
        .collect();
    assert_eq!(queries, ["what color?"]);
}
