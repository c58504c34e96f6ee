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
    // A finished run with an artifact.
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
    let artifact_id = artifact_url.rsplit('/').next().unwrap().to_string();
    // A run waiting in a tool, with a pending interrupt.
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
    // A run waiting for an approval.
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

    // An agent of alice's own.
    let r = app
        .post(
            "/api/agents",
            json!({"name": "alices-agent", "system_prompt": "alice-agent-secret"}),
            None,
        )
        .await;
    assert_eq!(r.status(), 201);

    let doc = openapi(&app).await;
    let secrets = [
        "alice-agent-secret".to_string(),
        "alices-agent".to_string(),
        conv.clone(),
        conv_done.clone(),
        conv_approval.clone(),
        run.clone(),
        run_done.clone(),
        run_approval.clone(),
        interrupt_id.clone(),
        approval_id.clone(),
        artifact_id.clone(),
    ];
    let mut checked = 0;
    for op in operations(&doc) {
        if op.is_public() {
            continue;
        }
        let id = if op.path.starts_with("/api/approvals/") {
            approval_id.clone()
        } else if op.path.starts_with("/api/artifacts/") {
            artifact_id.clone()
        } else {
            conv.clone()
        };
        let ids: BTreeMap<&str, String> = [
            ("id", id),
            ("run_id", run.clone()),
            ("interrupt_id", interrupt_id.clone()),
            // An agent is not a tenant's: the front-end threads' tenancy is in tests/api/frontends.
            ("agent", "nobody".to_string()),
            ("name", "alices-agent".to_string()),
            ("version", "1".to_string()),
        ]
        .into();
        let path = fill(&op.path, &ids);
        let body = op.has_body.then(|| op.valid_body());
        let r = send(&app, &op.method, &path, body, Some(BOB)).await;
        if op.has_path_params() {
            assert_eq!(
                error_code(r, 404).await,
                "not_found",
                "bob: {} {path}",
                op.method
            );
        } else {
            // Lists and catalogs answer, but show none of alice's things.
            let status = r.status().as_u16();
            let text = r.text().await.unwrap();
            assert!(
                status == 200 || op.method == "post",
                "bob: {} {path} → {status} {text}",
                op.method
            );
            for s in &secrets {
                assert!(
                    !text.contains(s.as_str()),
                    "bob: {} {path} shows {s}",
                    op.method
                );
            }
        }
        checked += 1;
    }
    assert!(checked >= 16, "only {checked} operations checked");

    // Nothing bob did changed alice's state.
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
        approval_id.as_str(),
        "bob decided alice's approval"
    );
    assert_eq!(deploy.call_count(), 0);
    // Bob's POST /api/chat created his own conversation only: alice still has three.
    let mine: Value = app.get_json("/api/conversations", None).await;
    assert_eq!(mine["items"].as_array().unwrap().len(), 3);
    // The interrupt is still pending: alice can recall it.
    let r = app
        .delete(
            &format!("/api/conversations/{conv}/interrupt/{interrupt_id}"),
            None,
        )
        .await;
    assert_eq!(r.status(), 200, "bob recalled alice's interrupt");
    // And the artifact is still alice's, served without injected headers.
    let r = app.get(&artifact_url, None).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("set-cookie").is_none());
    assert_eq!(r.headers()["content-type"], "application/octet-stream");
    let disposition = r.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(!disposition.contains('\r') && !disposition.contains('\n'));
    assert_eq!(r.bytes().await.unwrap().as_ref(), b"<h1>hi</h1>");

    // Let both runs finish.
    app.gate.release();
    let r = app
        .post(
            &format!("/api/approvals/{approval_id}"),
            json!({"approve": false}),
            None,
        )
        .await;
    assert_eq!(r.status(), 200);
    for run in [&run, &run_approval] {
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
