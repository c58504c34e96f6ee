//! `/a2a/{agent}` with plain HTTP: the cards, the key the card advertises, tenancy, both
//! wires' shapes, A2A's error codes for bad input, and a subscription resumed after the event
//! a client saw last.

use serde_json::{json, Value};

use super::{app, deploy_run, request, ALICE, BOB};
use crate::support::app::TestApp;

async fn rpc(app: &TestApp, agent: &str, body: Value, key: &str) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/a2a/{agent}")))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn call(app: &TestApp, body: Value, key: &str) -> Value {
    let r = rpc(app, "helper", body, key).await;
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

fn message(text: &str, task: Option<&str>, v03: bool) -> Value {
    let mut m = if v03 {
        json!({"kind": "message", "role": "user", "messageId": "m1",
               "parts": [{"kind": "text", "text": text}]})
    } else {
        json!({"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": text}]})
    };
    if let Some(task) = task {
        m["taskId"] = json!(task);
    }
    m
}

/// The `data:` frames of an event stream, with their `id:` when they have one.
async fn frames(r: reqwest::Response) -> Vec<(Option<u64>, Value)> {
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let body = r.text().await.unwrap();
    body.split("\n\n")
        .filter(|f| f.contains("data: "))
        .map(|f| {
            let id = f
                .lines()
                .find_map(|l| l.strip_prefix("id: "))
                .map(|i| i.parse().unwrap());
            let data = f.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
            (id, serde_json::from_str(data).unwrap())
        })
        .collect()
}

#[tokio::test]
async fn cards_are_public_and_advertise_the_key_the_endpoint_enforces() {
    let app = app().await;
    let card: Value = app
        .client
        .get(app.url("/a2a/helper/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["name"], "helper");
    assert_eq!(card["description"], "Echoes and deploys");
    let url = app.url("/a2a/helper");
    assert_eq!(card["supportedInterfaces"][0]["url"], url);
    assert_eq!(card["url"], url);
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    let default: Value = app
        .client
        .get(app.url("/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(default["name"], "helper");
    let missing = app
        .client
        .get(app.url("/a2a/nobody/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);

    let get = request(1, "GetTask", json!({"id": "x"}));
    for key in [None, Some("wrong")] {
        let mut rb = app.client.post(app.url("/a2a/helper")).json(&get);
        if let Some(key) = key {
            rb = rb.bearer_auth(key);
        }
        let r = rb.send().await.unwrap();
        assert_eq!(r.status(), 401);
        assert_eq!(r.headers()["www-authenticate"], "Bearer");
    }
    let r = rpc(&app, "nobody", get, ALICE).await;
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn each_wire_gets_its_own_shapes_for_the_same_task() {
    let app = app().await;
    app.llm.text("brief").stream_text(&["Hello."]);
    let sent = call(
        &app,
        request(
            1,
            "message/send",
            json!({"message": message("hi", None, true)}),
        ),
        ALICE,
    )
    .await;
    let task = &sent["result"];
    assert_eq!(task["kind"], "task", "{sent}");
    assert_eq!(task["status"]["state"], "completed", "{sent}");
    assert_eq!(
        task["artifacts"][0]["parts"][0],
        json!({"kind": "text", "text": "Hello."})
    );
    assert_eq!(task["history"][0]["taskId"], task["id"]);
    let id = task["id"].as_str().unwrap();
    let v1 = call(&app, request(2, "GetTask", json!({"id": id})), ALICE).await;
    let t = &v1["result"];
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{v1}");
    assert_eq!(t["artifacts"][0]["parts"][0], json!({"text": "Hello."}));
    assert_eq!(t["history"][0]["role"], "ROLE_USER");
    assert_eq!(t["history"][1]["role"], "ROLE_AGENT");
    assert!(t.get("kind").is_none());
    let short = call(
        &app,
        request(3, "tasks/get", json!({"id": id, "historyLength": 1})),
        ALICE,
    )
    .await;
    assert_eq!(
        short["result"]["history"].as_array().unwrap().len(),
        1,
        "{short}"
    );
    assert_eq!(short["result"]["history"][0]["role"], "agent");
}

#[tokio::test]
async fn another_tenants_or_agents_task_is_not_found() {
    let app = app().await;
    app.llm.text("brief").stream_text(&["Hello."]);
    let sent = call(
        &app,
        request(
            1,
            "SendMessage",
            json!({"message": message("hi", None, false)}),
        ),
        ALICE,
    )
    .await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    for (key, agent, method, params) in [
        (BOB, "helper", "GetTask", json!({"id": id})),
        (BOB, "helper", "CancelTask", json!({"id": id})),
        (BOB, "helper", "SubscribeToTask", json!({"id": id})),
        (
            BOB,
            "helper",
            "SendMessage",
            json!({"message": message("yes", Some(&id), false)}),
        ),
        (ALICE, "writer", "GetTask", json!({"id": id})),
        (ALICE, "helper", "GetTask", json!({"id": "not-a-uuid"})),
    ] {
        let r: Value = rpc(&app, agent, request(9, method, params), key)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(
            r["error"]["code"], -32001,
            "{method} as {key} on {agent}: {r}"
        );
        assert_eq!(r["error"]["data"][0]["reason"], "TASK_NOT_FOUND");
    }
    // The owner's own: an ended task takes no more messages and cannot be canceled.
    let again = call(
        &app,
        request(
            2,
            "SendMessage",
            json!({"message": message("more", Some(&id), false)}),
        ),
        ALICE,
    )
    .await;
    assert_eq!(again["error"]["code"], -32004, "{again}");
    let cancel = call(&app, request(3, "CancelTask", json!({"id": id})), ALICE).await;
    assert_eq!(cancel["error"]["code"], -32002, "{cancel}");
    let sub = call(
        &app,
        request(4, "SubscribeToTask", json!({"id": id})),
        ALICE,
    )
    .await;
    assert_eq!(sub["error"]["code"], -32004, "{sub}");
}

#[tokio::test]
async fn bad_input_gets_json_rpc_errors_never_a_500() {
    let app = app().await;
    let raw = |body: &'static str| {
        let app = &app;
        async move {
            let r = app
                .client
                .post(app.url("/a2a/helper"))
                .bearer_auth(ALICE)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "{body}");
            r.json::<Value>().await.unwrap()
        }
    };
    assert_eq!(raw("{").await["error"]["code"], -32700);
    assert_eq!(
        raw(r#"{"jsonrpc":"2.0","method":"GetTask"}"#).await["error"]["code"],
        -32600
    );
    let code = |v: Value| v["error"]["code"].as_i64().unwrap();
    let cases = [
        (request(1, "tasks/send", json!({})), -32601),
        (request(2, "GetTask", json!({})), -32602),
        (
            request(
                3,
                "SendMessage",
                json!({"message": {"role": "ROLE_USER", "parts": []}}),
            ),
            -32602,
        ),
        (
            request(
                4,
                "SendMessage",
                json!({"message": {"role": "ROLE_USER", "messageId": "m",
            "parts": [{"url": "https://e.x/a.pdf", "mediaType": "application/pdf"}]}}),
            ),
            -32005,
        ),
        (request(5, "ListTasks", json!({})), -32004),
        (
            request(6, "CreateTaskPushNotificationConfig", json!({})),
            -32003,
        ),
        (request(7, "GetExtendedAgentCard", json!({})), -32007),
    ];
    for (body, expected) in cases {
        let got = call(&app, body.clone(), ALICE).await;
        assert_eq!(code(got.clone()), expected, "{body} → {got}");
    }
    let r = app
        .client
        .post(app.url("/a2a/helper"))
        .bearer_auth(ALICE)
        .header("a2a-version", "2.0")
        .json(&request(8, "GetTask", json!({"id": "x"})))
        .send()
        .await
        .unwrap();
    let body: Value = r.json().await.unwrap();
    assert_eq!(code(body), -32009);
}

#[tokio::test]
async fn a_subscription_resumes_after_the_last_event_the_client_saw() {
    let app = app().await;
    deploy_run(&app, "Deployed.");
    let body = request(
        1,
        "SendStreamingMessage",
        json!({"message": message("deploy prod", None, false)}),
    );
    let first = frames(rpc(&app, "helper", body, ALICE).await).await;
    assert!(first[0].1["result"]["task"].is_object(), "{first:?}");
    let (_, last) = first.last().unwrap();
    let state = &last["result"]["statusUpdate"]["status"]["state"];
    assert_eq!(state, "TASK_STATE_INPUT_REQUIRED", "{first:?}");
    let task = first[0].1["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Resumed after the second event: the task, then only what followed it.
    let seen = first[1].0.unwrap();
    let sub = app
        .client
        .post(app.url("/a2a/helper"))
        .bearer_auth(ALICE)
        .header("last-event-id", seen.to_string())
        .json(&request(2, "SubscribeToTask", json!({"id": task})))
        .send()
        .await
        .unwrap();
    let again = frames(sub).await;
    assert!(again[0].1["result"]["task"].is_object(), "{again:?}");
    assert!(
        again[1..].iter().all(|(id, _)| id.unwrap() > seen),
        "{again:?}"
    );
    assert_eq!(again.len(), first.len() - 1, "{again:?}");
    // Answered in the same task on the 0.3 wire: the run goes on to its end.
    let answer = request(
        3,
        "message/stream",
        json!({"message": message("yes", Some(&task), true)}),
    );
    let rest = frames(rpc(&app, "helper", answer, ALICE).await).await;
    let (_, end) = rest.last().unwrap();
    assert_eq!(end["result"]["kind"], "status-update", "{rest:?}");
    assert_eq!(end["result"]["status"]["state"], "completed", "{rest:?}");
    assert_eq!(end["result"]["final"], true);
    let chunks: String = rest
        .iter()
        .filter(|(_, f)| f["result"]["kind"] == "artifact-update")
        .map(|(_, f)| {
            f["result"]["artifact"]["parts"][0]["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(chunks, "Deployed.");
}
