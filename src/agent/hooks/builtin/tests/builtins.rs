//! The built-in hooks: read-only, rate limit, truncate, audit.

use super::*;

#[tokio::test]
async fn read_only_blocks_writing_tools_only() {
    let mut c = ctx("delete_user");
    assert_eq!(ReadOnlyHook.pre_tool_use(&c).await, Ok(PreVerdict::Allow));
    c.tool_writes = true;
    assert_eq!(
        ReadOnlyHook.pre_tool_use(&c).await,
        Ok(PreVerdict::Block(
            "the organisation is in read-only mode: tool 'delete_user' can modify data and is disabled"
                .into()
        ))
    );
}

#[test]
fn rate_limit_window_slides_per_tool() {
    let h = RateLimitHook::new(2, Duration::from_secs(10));
    let t0 = Instant::now();
    let at = |s: f64| t0 + Duration::from_secs_f64(s);
    assert_eq!(h.check_at("a", at(0.0)), Ok(()));
    assert_eq!(h.check_at("a", at(1.0)), Ok(()));
    assert_eq!(h.check_at("a", at(2.0)), Err(Duration::from_secs(8)));
    assert_eq!(h.check_at("b", at(2.0)), Ok(()), "limits are per tool");
    assert_eq!(
        h.check_at("a", at(10.0)),
        Ok(()),
        "the first call left the window"
    );
    assert_eq!(h.check_at("a", at(10.5)), Err(Duration::from_millis(500)));
    assert_eq!(h.check_at("a", at(11.0)), Ok(()));
}

#[tokio::test]
async fn rate_limit_block_says_when_to_retry() {
    let h = RateLimitHook::new(1, Duration::from_secs(60));
    assert_eq!(h.pre_tool_use(&ctx("search")).await, Ok(PreVerdict::Allow));
    let Ok(PreVerdict::Block(reason)) = h.pre_tool_use(&ctx("search")).await else {
        panic!("second call must be blocked");
    };
    assert!(
        reason.contains("'search'") && reason.contains("at most 1 call per 60 s"),
        "{reason}"
    );
    assert!(
        reason.contains("retry in 60 s") || reason.contains("retry in 59 s"),
        "{reason}"
    );
}

#[tokio::test]
async fn truncate_cuts_on_a_char_boundary_and_says_how_much() {
    let h = TruncateResultHook::new(4);
    assert_eq!(
        h.truncate("héllo wörld").as_deref(),
        Some("héll\n[… truncated 7 characters]")
    );
    assert_eq!(h.truncate("héll"), None);
    assert_eq!(
        h.post_tool_use(&post("t", "abc")).await,
        Ok(PostVerdict::Keep)
    );
    assert_eq!(
        h.post_tool_use(&post("t", "ééééé")).await,
        Ok(PostVerdict::Rewrite(
            "éééé\n[… truncated 1 characters]".into()
        ))
    );
}

#[tokio::test]
async fn audit_records_every_call_with_its_outcome() {
    let sink = Arc::new(MemoryAuditSink::new());
    let r = HookRunner::new(vec![HookEntry::new(Arc::new(AuditHook::new(sink.clone())))]);
    let mut blocked = post("rm", "Error: blocked");
    blocked.blocked = true;
    let mut failed = post("http", "Error: 500");
    failed.error = true;
    for mut p in [post("calc", "42"), failed, blocked] {
        r.post_tool_use(&mut p).await;
    }
    let got = sink.records();
    let outcomes: Vec<_> = got.iter().map(|r| (r.tool.as_str(), r.outcome)).collect();
    assert_eq!(
        outcomes,
        [
            ("calc", AuditOutcome::Ok),
            ("http", AuditOutcome::Error),
            ("rm", AuditOutcome::Blocked)
        ]
    );
    assert_eq!((got[0].result_size, got[0].duration_ms), (2, 7));
    assert_eq!(got[0].arguments, json!({"q": 1}));
    let v = serde_json::to_value(&got[2]).unwrap();
    assert_eq!(
        (v["outcome"].as_str(), v["call_id"].as_str()),
        (Some("blocked"), Some("call-1"))
    );
}
