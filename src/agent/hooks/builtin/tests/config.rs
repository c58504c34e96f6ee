//! Hooks built from configuration: errors, settings, names, the approval hook.

use super::*;

fn specs(v: Value) -> Vec<HookSpec> {
    serde_json::from_value(v).unwrap()
}

fn deps(audit: bool) -> HookDeps {
    HookDeps {
        audit: audit.then(|| Arc::new(MemoryAuditSink::new()) as Arc<dyn AuditSink>),
        approvals: Arc::new(ApprovalBroker::new()),
        http: reqwest::Client::new(),
    }
}

fn build_err(v: Value) -> String {
    build_hooks(&specs(v), &deps(true), false)
        .err()
        .unwrap()
        .to_string()
}

#[test]
fn config_errors_name_the_entry_and_field() {
    let ok = json!({"kind": "read_only"});
    assert_eq!(
        build_err(json!([ok, ok, {"kind": "webhook"}])),
        "hooks[2].url: a webhook hook needs a url"
    );
    assert!(build_err(json!([{"kind": "nope"}]))
        .starts_with("hooks[0].kind: unknown hook kind \"nope\""));
    assert!(
        build_err(json!([{"kind": "rate_limit", "max_calls": 0, "window_s": 1}]))
            .starts_with("invalid value 0 for hooks[0].max_calls: "),
    );
    assert_eq!(
        build_err(json!([{"kind": "rate_limit", "max_calls": 3}])),
        "hooks[0]: kind \"rate_limit\" needs window_s"
    );
    assert_eq!(
        build_err(json!([{"kind": "read_only", "max_chars": 3}])),
        "hooks[0]: max_chars does not apply to kind \"read_only\""
    );
    assert!(
        build_err(json!([{"kind": "read_only", "tools": "[x"}])).starts_with("hooks[0].tools: ")
    );
    assert!(build_err(json!([{"kind": "webhook", "url": "ftp://x"}])).starts_with("hooks[0].url: "));
    assert!(build_err(
        json!([{"kind": "approval", "approval_timeout_s": 10, "timeout_ms": 10000}])
    )
    .starts_with("hooks[0].timeout_ms: "));
    assert!(build_err(json!([{"kind": "read_only", "timeout_ms": 0}]))
        .starts_with("invalid value 0 for hooks[0].timeout_ms: "));
    assert!(plan_hooks(&specs(json!([{"kind": "truncate_result"}]))).is_err());
}

#[test]
fn audit_without_a_sink_fails_validation_passes() {
    let s = specs(json!([{"kind": "read_only"}, {"kind": "audit"}]));
    assert!(plan_hooks(&s).is_ok());
    assert_eq!(
        build_hooks(&s, &deps(false), false).err(),
        Some(HookConfigError::NoAuditSink { index: 1 })
    );
    assert_eq!(
        build_hooks(&s, &deps(true), false).map(|r| r.len()).ok(),
        Some(2)
    );
}

#[tokio::test]
async fn built_hooks_keep_their_filter_priority_and_settings() {
    let s = specs(json!([
        {"kind": "truncate_result", "max_chars": 3, "priority": 2},
        {"kind": "read_only", "tools": "db_*"},
        {"kind": "rate_limit", "max_calls": 1, "window_s": 60, "tools": "web"},
        {"kind": "webhook", "url": "http://127.0.0.1:9/hook", "tools": "never_*"},
        {"kind": "audit", "priority": 1},
    ]));
    assert!(plan_hooks(&s).is_ok());
    let sink = Arc::new(MemoryAuditSink::new());
    let d = HookDeps {
        audit: Some(sink.clone()),
        ..deps(false)
    };
    let r = build_hooks(&s, &d, false).unwrap();
    assert_eq!(r.len(), 5);
    let mut db = ctx("db_drop");
    db.tool_writes = true;
    assert!(matches!(
        r.pre_tool_use(&mut db).await,
        PreOutcome::Blocked(_)
    ));
    let mut fs = ctx("fs_write");
    fs.tool_writes = true;
    assert!(matches!(
        r.pre_tool_use(&mut fs).await,
        PreOutcome::Allowed(_)
    ));
    assert!(matches!(
        r.pre_tool_use(&mut ctx("web")).await,
        PreOutcome::Allowed(_)
    ));
    assert!(matches!(
        r.pre_tool_use(&mut ctx("web")).await,
        PreOutcome::Blocked(_)
    ));
    let out = r.post_tool_use(&mut post("web", "abcdef")).await;
    assert_eq!(out.observation, "abc\n[… truncated 3 characters]");
    // Audit (priority 1) ran before truncation (priority 2): it saw the full observation.
    assert_eq!(
        sink.records()
            .iter()
            .map(|r| r.result_size)
            .collect::<Vec<_>>(),
        [6]
    );
}

#[tokio::test]
async fn a_configured_name_shows_in_fail_closed_messages() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    drop(listener);
    let s = specs(
        json!([{"kind": "webhook", "url": url, "name": "corp-policy",
        "policy": "fail_closed"}]),
    );
    let r = build_hooks(&s, &deps(false), false).unwrap();
    let PreOutcome::Blocked(reason) = r.pre_tool_use(&mut ctx("t")).await else {
        panic!("fail-closed webhook that is down must block");
    };
    assert!(reason.contains("'corp-policy'"), "{reason}");
}

#[tokio::test]
async fn approval_hook_is_added_when_a_tool_requires_it() {
    let d = deps(false);
    assert!(build_hooks(&[], &d, false).unwrap().is_empty());
    let configured = specs(json!([{"kind": "approval", "approval_timeout_s": 30}]));
    assert_eq!(build_hooks(&configured, &d, true).unwrap().len(), 1);
    let r = build_hooks(&[], &d, true).unwrap();
    assert_eq!(r.len(), 1);

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut c = ctx("send_mail");
    c.requires_approval = true;
    c.events = Some(tx.into());
    let task = tokio::spawn(async move { r.pre_tool_use(&mut c).await });
    let Some(AgentEvent::Step(StepEvent::ApprovalRequired { approval_id, .. })) = rx.recv().await
    else {
        panic!("expected approval_required");
    };
    let id = uuid::Uuid::parse_str(&approval_id).unwrap();
    d.approvals.decide(id, false, Some("no".into())).unwrap();
    assert_eq!(
        task.await.unwrap(),
        PreOutcome::Blocked("rejected by a reviewer: no".into())
    );
}
