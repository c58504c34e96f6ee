//! Model and tool output the database cannot hold as is.

use super::*;

/// NUL (U+0000) in what the model and a tool produce: the API refuses it in client input
/// (400), but model output cannot be refused — it must still be persisted (PostgreSQL `text`
/// cannot hold NUL) and the run must complete.
async fn nul_in_model_and_tool_output_is_persisted(db: String) {
    let app = TestApp::spawn_on(&db).await;
    app.llm
        .tool_calls(&[("c1", "echo", "{\"text\":\"a\\u0000b\"}")]);
    app.llm.text("thinking\u{0}done");
    app.llm
        .push_stream(reagent::testing::scripted::Turn::Stream(
            vec!["answer with \u{0} NUL".into()],
            None,
        ));
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    let events = app.events(&run, None).await;
    let done = &events.last().unwrap().data;
    assert_eq!(done["status"], "completed", "{done}");
    let detail: Value = app
        .get_json(&format!("/api/conversations/{conv}"), None)
        .await;
    let messages = detail["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{detail}");
    assert!(messages[1]["content"]
        .as_str()
        .unwrap()
        .contains("answer with"));
    let run_row: Value = app.get_json(&format!("/api/runs/{run}"), None).await;
    assert_eq!(run_row["status"], "completed");
    let stored = app
        .app
        .state
        .store
        .list_events(uuid::Uuid::parse_str(&run).unwrap(), 0)
        .await
        .unwrap();
    assert_eq!(stored.len(), events.len());
}

on_both_backends!(nul_in_model_and_tool_output_is_persisted);
