//! Agents managed at run time (docs/api.md "Agents"): CRUD with immutable versions, tenancy,
//! read-only configured agents, the `[[agents]]` checks and the API's bounds, runs of an API
//! agent pinned to the version their conversation recorded, and a second instance on the same
//! database seeing a change at its next run start.

use super::*;

on_both_backends!(
    agents_are_made_versioned_and_deleted,
    agents_belong_to_their_tenant_and_configured_ones_are_read_only,
    bad_agents_are_refused_and_change_nothing,
    conversations_run_on_the_version_they_recorded,
    another_instance_sees_a_change_at_its_next_run,
);

const ALICE: &str = "ka-secret-1";
const BOB: &str = "kb-secret-2";

/// An app on `db` with alice's and bob's keys and one configured agent, `helper`.
async fn app_on(db: &str) -> TestApp {
    let mut app = TestApp::with(Options {
        db_url: Some(db.to_string()),
        env: vec![("REAGENT_API_KEYS", format!("alice:{ALICE},bob:{BOB}"))],
        toml: "[[models]]\nname = \"scripted\"\n\n[[agents]]\nname = \"helper\"\n\
               system_prompt = \"Configured prompt.\"\ntools = [\"echo\"]\n"
            .into(),
        ..Options::default()
    })
    .await;
    app.key = Some(ALICE.into());
    app
}

fn writer(prompt: &str) -> Value {
    json!({"name": "writer", "description": "Writes", "system_prompt": prompt,
           "tools": ["ech*"], "max_iterations": 4, "temperature": 0.5})
}

async fn body(r: reqwest::Response, status: u16) -> Value {
    assert_eq!(r.status(), status);
    r.json().await.unwrap()
}

/// The system prompt the model was last sent.
fn last_prompt(app: &TestApp) -> String {
    let request = app.llm.chat_requests().last().cloned().unwrap();
    serde_json::to_string(&request.messages).unwrap()
}

/// Runs `query` through `/api/chat` with `extra` fields and returns the conversation id.
async fn chat(app: &TestApp, extra: Value, key: &str) -> String {
    app.llm.text("done");
    let mut request = json!({"query": "hi"});
    for (k, v) in extra.as_object().unwrap() {
        request[k] = v.clone();
    }
    let r = app.post("/api/chat", request, Some(key)).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let events = crate::support::sse::read_all(r).await;
    assert_eq!(events.last().unwrap().event, "done");
    events[0].data["conversation_id"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn agents_are_made_versioned_and_deleted(db: String) {
    let app = app_on(&db).await;
    let made = body(
        app.post("/api/agents", writer("One."), Some(ALICE)).await,
        201,
    )
    .await;
    assert_eq!(
        (made["version"].clone(), made["source"].clone()),
        (json!(1), json!("api"))
    );
    assert_eq!(made["model"], "scripted", "the default model");
    assert_eq!(made["system_prompt"], "One.");
    assert_eq!(made["temperature"], 0.5);

    let list = app.get_json("/api/agents", Some(ALICE)).await;
    let names: Vec<(&str, &str)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["name"].as_str().unwrap(), a["source"].as_str().unwrap()))
        .collect();
    assert_eq!(names, [("helper", "config"), ("writer", "api")]);
    assert_eq!(list[0]["version"], Value::Null);
    assert!(
        list[0].get("system_prompt").is_none(),
        "configured prompts stay"
    );

    let put = app
        .put("/api/agents/writer", writer("Two."), Some(ALICE))
        .await;
    assert_eq!(body(put, 200).await["version"], 2);
    let shown = app.get_json("/api/agents/writer", Some(ALICE)).await;
    assert_eq!(
        (shown["version"].clone(), shown["system_prompt"].clone()),
        (json!(2), json!("Two."))
    );
    let versions = app
        .get_json("/api/agents/writer/versions", Some(ALICE))
        .await;
    let prompts: Vec<&str> = versions
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["system_prompt"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["One.", "Two."], "versions are immutable");
    let first = app
        .get_json("/api/agents/writer/versions/1", Some(ALICE))
        .await;
    assert_eq!(first["system_prompt"], "One.");
    let r = app.get("/api/agents/writer/versions/9", Some(ALICE)).await;
    assert_eq!(r.status(), 404);
    let r = app.post("/api/agents", writer("Again."), Some(ALICE)).await;
    assert_eq!(error_code(r, 409).await, "conflict");

    let r = app.delete("/api/agents/writer", Some(ALICE)).await;
    assert_eq!(r.status(), 204);
    for path in ["/api/agents/writer", "/api/agents/writer/versions"] {
        assert_eq!(app.get(path, Some(ALICE)).await.status(), 404, "{path}");
    }
    assert_eq!(
        app.delete("/api/agents/writer", Some(ALICE)).await.status(),
        404
    );
    assert_eq!(
        app.get_json("/api/agents", Some(ALICE))
            .await
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // Made again, it goes on from its last number.
    let again = body(
        app.post("/api/agents", writer("Three."), Some(ALICE)).await,
        201,
    )
    .await;
    assert_eq!(again["version"], 3);
    app.stop().await;
}

async fn agents_belong_to_their_tenant_and_configured_ones_are_read_only(db: String) {
    let app = app_on(&db).await;
    body(
        app.post("/api/agents", writer("Alice's."), Some(ALICE))
            .await,
        201,
    )
    .await;
    for path in [
        "/api/agents/writer",
        "/api/agents/writer/versions",
        "/api/agents/writer/versions/1",
    ] {
        assert_eq!(app.get(path, Some(BOB)).await.status(), 404, "{path}");
    }
    assert_eq!(
        app.put("/api/agents/writer", writer("x"), Some(BOB))
            .await
            .status(),
        404
    );
    assert_eq!(
        app.delete("/api/agents/writer", Some(BOB)).await.status(),
        404
    );
    let bobs = app.get_json("/api/agents", Some(BOB)).await;
    assert_eq!(
        bobs.as_array().unwrap().len(),
        1,
        "only the configured agent"
    );
    let r = app
        .post("/api/conversations", json!({"agent": "writer"}), Some(BOB))
        .await;
    assert_eq!(error_code(r, 404).await, "not_found", "as an unknown agent");
    let r = app
        .post(
            "/api/chat",
            json!({"query": "q", "agent": "writer"}),
            Some(BOB),
        )
        .await;
    assert_eq!(error_code(r, 404).await, "not_found");
    // Names are per tenant.
    let own = body(
        app.post("/api/agents", writer("Bob's."), Some(BOB)).await,
        201,
    )
    .await;
    assert_eq!(own["version"], 1);
    let alices = app.get_json("/api/agents/writer", Some(ALICE)).await;
    assert_eq!(alices["system_prompt"], "Alice's.");

    // Configured agents: listed, never changed or shadowed.
    let helper = app.get_json("/api/agents/helper", Some(ALICE)).await;
    assert_eq!(helper["source"], "config");
    let mut shadow = writer("Shadow.");
    shadow["name"] = json!("helper");
    let r = app.post("/api/agents", shadow.clone(), Some(ALICE)).await;
    assert_eq!(error_code(r, 409).await, "conflict");
    let r = app.put("/api/agents/helper", shadow, Some(ALICE)).await;
    assert_eq!(error_code(r, 409).await, "conflict");
    let r = app.delete("/api/agents/helper", Some(ALICE)).await;
    assert_eq!(error_code(r, 409).await, "conflict");
    let r = app.get("/api/agents/helper/versions", Some(ALICE)).await;
    assert_eq!(r.status(), 409);
    app.stop().await;
}

async fn bad_agents_are_refused_and_change_nothing(db: String) {
    let app = app_on(&db).await;
    let mut cases: Vec<(Value, &str)> = vec![
        (
            json!({"name": "a", "tools": ["ecoh"]}),
            "did you mean \"echo\"",
        ),
        (
            json!({"name": "a", "model": "scriptd"}),
            "nearest: scripted",
        ),
        (json!({"name": "a b"}), "name"),
        (json!({"name": ""}), "name"),
        (json!({"name": "a\u{0}b"}), "NUL"),
        (json!({"name": "a", "description": "x\u{0}"}), "NUL"),
        (
            json!({"name": "a", "engine": "fast"}),
            "expected react, dag or auto",
        ),
        (json!({"name": "a", "max_iterations": 0}), "max_iterations"),
        (json!({"name": "a", "temperature": 7}), "temperature"),
        (json!({"name": "a", "colour": "red"}), "colour"),
        (json!({"name": "a", "tools": ["[bad"]}), "bad glob"),
        (json!({"description": "no name"}), "name is required"),
        (
            json!({"name": "a", "system_prompt": "x".repeat(1_000_000)}),
            "system_prompt",
        ),
        (
            json!({"name": "a", "tools": vec!["echo"; 10_000]}),
            "at most 256",
        ),
    ];
    cases.push((json!({"name": "a".repeat(65)}), "name"));
    for (agent, words) in cases {
        let r = app.post("/api/agents", agent, Some(ALICE)).await;
        assert_eq!(r.status(), 400, "{words}");
        let message = r.json::<Value>().await.unwrap()["error"]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(message.contains(words), "{words:?} not in {message:?}");
    }
    assert_eq!(
        app.get_json("/api/agents", Some(ALICE))
            .await
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // A bad new version leaves the agent as it was.
    body(
        app.post("/api/agents", writer("Kept."), Some(ALICE)).await,
        201,
    )
    .await;
    let r = app
        .put(
            "/api/agents/writer",
            json!({"tools": ["nope"]}),
            Some(ALICE),
        )
        .await;
    assert_eq!(r.status(), 400);
    let r = app
        .put("/api/agents/writer", json!({"name": "other"}), Some(ALICE))
        .await;
    assert_eq!(r.status(), 400, "no renames");
    // No such agent is not found, whatever the body (a path that is no agent name included).
    for path in ["/api/agents/nobody", "/api/agents/a%20b"] {
        let r = app
            .put(path, json!({"name": "other", "seed": 1.0}), Some(ALICE))
            .await;
        assert_eq!(r.status(), 404, "{path}");
    }
    let kept = app.get_json("/api/agents/writer", Some(ALICE)).await;
    assert_eq!(
        (kept["version"].clone(), kept["system_prompt"].clone()),
        (json!(1), json!("Kept."))
    );
    app.stop().await;
}

async fn conversations_run_on_the_version_they_recorded(db: String) {
    let app = app_on(&db).await;
    body(
        app.post("/api/agents", writer("Version one."), Some(ALICE))
            .await,
        201,
    )
    .await;
    let conv = body(
        app.post(
            "/api/conversations",
            json!({"agent": "writer"}),
            Some(ALICE),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(conv["agent_version"], 1);
    let id = conv["id"].as_str().unwrap().to_string();
    app.llm.text("ok");
    let run = app
        .start_run(&id, json!({"query": "hi"}), Some(ALICE))
        .await;
    app.events(&run, None).await;
    assert!(last_prompt(&app).contains("Version one."));
    let tools: Vec<String> = app
        .llm
        .chat_requests()
        .last()
        .unwrap()
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(tools, ["echo"], "its tool globs apply");

    app.put("/api/agents/writer", writer("Version two."), Some(ALICE))
        .await;
    app.llm.text("ok");
    let run = app
        .start_run(&id, json!({"query": "again"}), Some(ALICE))
        .await;
    app.events(&run, None).await;
    assert!(
        last_prompt(&app).contains("Version one."),
        "pinned to its version"
    );

    // New conversations take the latest, or the version asked for.
    chat(&app, json!({"agent": "writer"}), ALICE).await;
    assert!(last_prompt(&app).contains("Version two."));
    let older = chat(&app, json!({"agent": "writer", "agent_version": 1}), ALICE).await;
    assert!(last_prompt(&app).contains("Version one."));
    let shown = app
        .get_json(&format!("/api/conversations/{older}"), Some(ALICE))
        .await;
    assert_eq!(shown["agent_version"], 1);
    let r = app
        .post(
            "/api/chat",
            json!({"query": "q", "agent": "writer", "agent_version": 7}),
            Some(ALICE),
        )
        .await;
    assert_eq!(r.status(), 400);
    let r = app
        .post(
            "/api/conversations",
            json!({"agent": "helper", "agent_version": 1}),
            Some(ALICE),
        )
        .await;
    assert_eq!(r.status(), 400, "configured agents have no versions");

    // Deleted: no new conversations, the old ones keep their version.
    app.delete("/api/agents/writer", Some(ALICE)).await;
    let r = app
        .post(
            "/api/conversations",
            json!({"agent": "writer"}),
            Some(ALICE),
        )
        .await;
    assert_eq!(error_code(r, 404).await, "not_found", "deleted");
    app.llm.text("ok");
    let run = app
        .start_run(&id, json!({"query": "still"}), Some(ALICE))
        .await;
    let events = app.events(&run, None).await;
    assert_eq!(events.last().unwrap().event, "done");
    assert!(last_prompt(&app).contains("Version one."));
    app.stop().await;
}

async fn another_instance_sees_a_change_at_its_next_run(db: String) {
    let (one, two) = (app_on(&db).await, app_on(&db).await);
    body(
        one.post("/api/agents", writer("First."), Some(ALICE)).await,
        201,
    )
    .await;
    chat(&two, json!({"agent": "writer"}), ALICE).await;
    assert!(last_prompt(&two).contains("First."));
    one.put("/api/agents/writer", writer("Second."), Some(ALICE))
        .await;
    chat(&two, json!({"agent": "writer"}), ALICE).await;
    assert!(last_prompt(&two).contains("Second."), "no restart needed");
    let listed = two.get_json("/api/agents/writer", Some(ALICE)).await;
    assert_eq!(listed["version"], 2);
    one.stop().await;
    two.stop().await;
}
