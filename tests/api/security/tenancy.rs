//! Tenancy: another tenant's key gets 404 on every route that names a resource and sees none
//! of them in lists; malformed ids are 400/404, never 500.

use super::*;

/// A tool that writes an artifact with a hostile name and type, for ownership checks.
fn evil_report() -> Arc<FakeTool> {
    FakeTool::text("evil_report", "written")
        .describe("Writes an artifact with a hostile name and type")
        .params(json!({"type": "object", "properties": {}}))
        .artifact(
            "a\r\nSet-Cookie: session=stolen\r\n\r\n<script>.html",
            "text/html\r\nSet-Cookie: session=stolen",
            b"<h1>hi</h1>",
        )
        .arc()
}

/// Alice's resources in every state a route can find them in, and the ids bob will try.
struct Alice {
    conv_done: String,
    run_done: String,
    artifact_url: String,
    artifact_id: String,
    conv: String,
    run: String,
    interrupt_id: String,
    conv_approval: String,
    run_approval: String,
    approval_id: String,
}

#[tokio::test]
async fn another_tenants_resources_are_404_on_every_route_and_stay_intact() {
    let deploy = deploy();
    let mut app = TestApp::with(Options {
        env: vec![(
            "REAGENT_API_KEYS",
            "alice:ka-secret-1,bob:kb-secret-2".into(),
        )],
        extra_tools: vec![deploy.clone(), evil_report()],
        ..Options::default()
    })
    .await;
    app.key = Some("ka-secret-1".into());
    let alice = alices_resources(&app).await;
    bob_gets_404_or_none_of_them(&app, &alice).await;
    alices_state_is_intact(&app, &alice, &deploy).await;
    artifact_is_still_served_safely(&app, &alice.artifact_url).await;
    finish_alices_runs(&app, &alice).await;
}

/// A finished run with an artifact, a run with a pending interrupt, one awaiting an approval,
/// and an agent, all alice's.
async fn alices_resources(app: &TestApp) -> Alice {
    let (conv_done, run_done, artifact_url) = finished_run_with_artifact(app).await;
    let artifact_id = artifact_url.rsplit('/').next().unwrap().to_string();
    let (conv, run, interrupt_id) = run_with_pending_interrupt(app).await;
    let (conv_approval, run_approval, approval_id) = run_awaiting_approval(app).await;
    // An agent of alice's own.
    let r = app
        .post(
            "/api/agents",
            json!({"name": "alices-agent", "system_prompt": "alice-agent-secret"}),
            None,
        )
        .await;
    assert_eq!(r.status(), 201);
    Alice {
        conv_done,
        run_done,
        artifact_url,
        artifact_id,
        conv,
        run,
        interrupt_id,
        conv_approval,
        run_approval,
        approval_id,
    }
}

/// A finished run with an artifact: `(conversation, run, artifact url)`.
async fn finished_run_with_artifact(app: &TestApp) -> (String, String, String) {
    app.llm.tool_calls(&[("c1", "evil_report", "{}")]);
    app.llm.text("ok");
    let conv_done = app.create_conversation(None).await;
    let run_done = app.start_run(&conv_done, json!({"query": "q"}), None).await;
    let events = app.events(&run_done, None).await;
    let artifact_url = events
        .iter()
        .find(|e| e.label() == "step:tool_end")
        .unwrap()
        .data["artifacts"][0]["url"]
        .as_str()
        .unwrap()
        .to_string();
    (conv_done, run_done, artifact_url)
}

/// A run waiting in a tool, with a pending interrupt: `(conversation, run, interrupt)`.
async fn run_with_pending_interrupt(app: &TestApp) -> (String, String, String) {
    app.llm.tool_calls(&[("c2", "gate", "{}")]);
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "q"}), None).await;
    app.wait_for(&run, |e| e.label() == "step:tool_start").await;
    let r = app.interrupt(&conv, "pending").await;
    assert_eq!(r.status(), 202);
    let interrupt_id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    (conv, run, interrupt_id)
}

/// A run waiting for an approval: `(conversation, run, approval)`.
async fn run_awaiting_approval(app: &TestApp) -> (String, String, String) {
    app.llm.tool_calls(&[("c3", "deploy", r#"{"env":"prod"}"#)]);
    let conv_approval = app.create_conversation(None).await;
    let run_approval = app
        .start_run(&conv_approval, json!({"query": "q"}), None)
        .await;
    let step = app
        .wait_for(&run_approval, |e| e.label() == "step:approval_required")
        .await;
    let approval_id = step.last().unwrap().data["approval_id"]
        .as_str()
        .unwrap()
        .to_string();
    (conv_approval, run_approval, approval_id)
}

/// Bob calls every non-public operation with alice's ids.
async fn bob_gets_404_or_none_of_them(app: &TestApp, alice: &Alice) {
    let doc = openapi(app).await;
    let secrets = [
        "alice-agent-secret".to_string(),
        "alices-agent".to_string(),
        alice.conv.clone(),
        alice.conv_done.clone(),
        alice.conv_approval.clone(),
        alice.run.clone(),
        alice.run_done.clone(),
        alice.run_approval.clone(),
        alice.interrupt_id.clone(),
        alice.approval_id.clone(),
        alice.artifact_id.clone(),
    ];
    let mut checked = 0;
    for op in operations(&doc) {
        if op.is_public() {
            continue;
        }
        bob_calls(app, alice, &op, &secrets).await;
        checked += 1;
    }
    assert!(checked >= 16, "only {checked} operations checked");
}

/// One operation as bob: 404 when it names alice's resource, otherwise none of her secrets.
async fn bob_calls(app: &TestApp, alice: &Alice, op: &Op, secrets: &[String]) {
    let id = if op.path.starts_with("/api/approvals/") {
        alice.approval_id.clone()
    } else if op.path.starts_with("/api/artifacts/") {
        alice.artifact_id.clone()
    } else {
        alice.conv.clone()
    };
    let ids: BTreeMap<&str, String> = [
        ("id", id),
        ("run_id", alice.run.clone()),
        ("interrupt_id", alice.interrupt_id.clone()),
        // An agent is not a tenant's: the front-end threads' tenancy is in tests/api/frontends.
        ("agent", "nobody".to_string()),
        ("name", "alices-agent".to_string()),
        ("version", "1".to_string()),
    ]
    .into();
    let path = fill(&op.path, &ids);
    let body = op.has_body.then(|| op.valid_body());
    let r = send(app, &op.method, &path, body, Some(BOB)).await;
    if op.has_path_params() {
        assert_eq!(
            error_code(r, 404).await,
            "not_found",
            "bob: {} {path}",
            op.method
        );
        return;
    }
    // Lists and catalogs answer, but show none of alice's things.
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    assert!(
        status == 200 || op.method == "post",
        "bob: {} {path} → {status} {text}",
        op.method
    );
    for s in secrets {
        assert!(
            !text.contains(s.as_str()),
            "bob: {} {path} shows {s}",
            op.method
        );
    }
}

/// Nothing bob did changed alice's state.
async fn alices_state_is_intact(app: &TestApp, alice: &Alice, deploy: &FakeTool) {
    let (conv, run) = (&alice.conv, &alice.run);
    let agent: Value = app.get_json("/api/agents/alices-agent", None).await;
    assert_eq!(agent["version"], 1, "bob changed alice's agent");
    let detail: Value = app
        .get_json(&format!("/api/conversations/{conv}"), None)
        .await;
    assert_eq!(detail["title"], "t", "bob renamed alice's conversation");
    assert_eq!(
        detail["active_run_id"],
        run.as_str(),
        "bob stopped alice's run"
    );
    let pending: Value = app.get_json("/api/approvals", None).await;
    assert_eq!(
        pending[0]["id"],
        alice.approval_id.as_str(),
        "bob decided alice's approval"
    );
    assert_eq!(deploy.call_count(), 0);
    // Bob's POST /api/chat created his own conversation only: alice still has three.
    let mine: Value = app.get_json("/api/conversations", None).await;
    assert_eq!(mine["items"].as_array().unwrap().len(), 3);
    // The interrupt is still pending: alice can recall it.
    let r = app
        .delete(
            &format!("/api/conversations/{conv}/interrupt/{}", alice.interrupt_id),
            None,
        )
        .await;
    assert_eq!(r.status(), 200, "bob recalled alice's interrupt");
}

/// The artifact is still alice's, served without injected headers.
async fn artifact_is_still_served_safely(app: &TestApp, artifact_url: &str) {
    let r = app.get(artifact_url, None).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("set-cookie").is_none());
    assert_eq!(r.headers()["content-type"], "application/octet-stream");
    let disposition = r.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(!disposition.contains('\r') && !disposition.contains('\n'));
    assert_eq!(r.bytes().await.unwrap().as_ref(), b"<h1>hi</h1>");
}

/// Lets both waiting runs finish.
async fn finish_alices_runs(app: &TestApp, alice: &Alice) {
    app.gate.release();
    let r = app
        .post(
            &format!("/api/approvals/{}", alice.approval_id),
            json!({"approve": false}),
            None,
        )
        .await;
    assert_eq!(r.status(), 200);
    for run in [&alice.run, &alice.run_approval] {
        let events = app.events(run, None).await;
        assert_eq!(events.last().unwrap().event, "done");
    }
}

#[tokio::test]
async fn malformed_ids_are_400_or_404_on_every_route() {
    let app = TestApp::spawn().await;
    let doc = openapi(&app).await;
    let bad = [
        "not-a-uuid",
        "..",
        "%2e%2e",
        "..%2f..%2fetc%2fpasswd",
        "%00",
        "%0d%0aSet-Cookie:%20x=1",
        "0",
        "-1",
        "%E2%98%83",
        "%7B00000000-0000-0000-0000-000000000000%7D",
        "00000000-0000-0000-0000-00000000000g",
        "00000000-0000-0000-0000-0000000000000",
    ];
    let long = "a".repeat(4000);
    let mut checked = 0;
    for op in operations(&doc).into_iter().filter(Op::has_path_params) {
        for value in bad.iter().copied().chain([long.as_str()]) {
            let ids: BTreeMap<&str, String> =
                ["id", "run_id", "interrupt_id", "agent", "name", "version"]
                    .into_iter()
                    .map(|k| (k, value.to_string()))
                    .collect();
            let path = fill(&op.path, &ids);
            let body = op.has_body.then(|| op.valid_body());
            let r = send(&app, &op.method, &path, body, None).await;
            let status = r.status().as_u16();
            assert!(
                status == 404 || status == 400,
                "{} {path} → {status}",
                op.method
            );
            assert!(r.headers().get("set-cookie").is_none());
            let body: Value = r.json().await.unwrap();
            assert!(
                body["error"]["code"].is_string(),
                "{} {path}: {body}",
                op.method
            );
            checked += 1;
        }
    }
    assert!(checked >= 10 * bad.len());
}
