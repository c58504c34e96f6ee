use super::*;
use crate::agent::events::{AgentEvent, StepEvent};
use crate::agent::hooks::approval::ApprovalBroker;
use crate::agent::hooks::config::{build_hooks, HookConfigError, HookDeps};
use crate::agent::hooks::{
    FailurePolicy, HookEntry, HookRunner, HookSpec, PostOutcome, PreOutcome,
};
use crate::config::plan_hooks;
use serde_json::json;

type Log = Arc<Mutex<Vec<&'static str>>>;

/// What a probe hook does in both phases.
#[derive(Clone)]
enum Act {
    Allow,
    Block(&'static str),
    /// Pre: appends its tag to `arguments.tags`; Post: appends `+tag` to the observation.
    Tag(&'static str),
    Fail,
    Hang,
}

struct Probe {
    name: &'static str,
    act: Act,
    log: Log,
}

#[async_trait]
impl Hook for Probe {
    fn name(&self) -> &str {
        self.name
    }
    async fn pre_tool_use(&self, ctx: &HookContext) -> Result<PreVerdict, HookError> {
        self.log.lock().unwrap().push(self.name);
        match self.act {
            Act::Allow => Ok(PreVerdict::Allow),
            Act::Block(r) => Ok(PreVerdict::Block(r.into())),
            Act::Tag(t) => {
                let mut args = ctx.arguments.clone();
                let mut tags = args["tags"].as_array().cloned().unwrap_or_default();
                tags.push(json!(t));
                args["tags"] = Value::Array(tags);
                Ok(PreVerdict::Rewrite(args))
            }
            Act::Fail => Err(HookError::Failed("boom".into())),
            Act::Hang => std::future::pending().await,
        }
    }
    async fn post_tool_use(&self, ctx: &PostContext) -> Result<PostVerdict, HookError> {
        self.log.lock().unwrap().push(self.name);
        match self.act {
            Act::Allow | Act::Block(_) => Ok(PostVerdict::Keep),
            Act::Tag(t) => Ok(PostVerdict::Rewrite(format!("{}+{t}", ctx.observation))),
            Act::Fail => Err(HookError::Failed("boom".into())),
            Act::Hang => std::future::pending().await,
        }
    }
}

fn probe(log: &Log, name: &'static str, act: Act) -> HookEntry {
    HookEntry::new(Arc::new(Probe {
        name,
        act,
        log: Arc::clone(log),
    }))
}

fn ctx(tool: &str) -> HookContext {
    HookContext {
        run_id: "run-1".into(),
        conversation_id: "conv-1".into(),
        iteration: 1,
        call_id: "call-1".into(),
        tool: tool.into(),
        arguments: json!({"q": 1}),
        tool_writes: false,
        requires_approval: false,
        events: None,
    }
}

fn post(tool: &str, observation: &str) -> PostContext {
    PostContext {
        call: ctx(tool),
        observation: observation.into(),
        error: false,
        blocked: false,
        duration_ms: 7,
    }
}

fn taken(log: &Log) -> Vec<&'static str> {
    std::mem::take(&mut *log.lock().unwrap())
}

#[tokio::test]
async fn runner_orders_by_ascending_priority_stably() {
    let log = Log::default();
    let r = HookRunner::new(vec![
        probe(&log, "c", Act::Allow).priority(5),
        probe(&log, "a", Act::Allow).priority(-1),
        probe(&log, "d", Act::Allow).priority(5),
        probe(&log, "b", Act::Allow),
    ]);
    r.pre_tool_use(&mut ctx("t")).await;
    assert_eq!(taken(&log), ["a", "b", "c", "d"]);
    r.post_tool_use(post("t", "o")).await;
    assert_eq!(taken(&log), ["a", "b", "c", "d"]);
}

#[tokio::test]
async fn first_block_stops_the_pre_chain() {
    let log = Log::default();
    let r = HookRunner::new(vec![
        probe(&log, "a", Act::Tag("x")).priority(0),
        probe(&log, "b", Act::Block("nope")).priority(1),
        probe(&log, "c", Act::Block("later")).priority(2),
    ]);
    assert_eq!(
        r.pre_tool_use(&mut ctx("t")).await,
        PreOutcome::Blocked("nope".into())
    );
    assert_eq!(taken(&log), ["a", "b"]);
}

#[tokio::test]
async fn rewrites_chain_in_both_phases() {
    let log = Log::default();
    let r = HookRunner::new(vec![
        probe(&log, "second", Act::Tag("y")).priority(2),
        probe(&log, "first", Act::Tag("x")).priority(1),
    ]);
    let mut c = ctx("t");
    let expected = json!({"q": 1, "tags": ["x", "y"]});
    assert_eq!(
        r.pre_tool_use(&mut c).await,
        PreOutcome::Allowed(expected.clone())
    );
    assert_eq!(c.arguments, expected);
    assert_eq!(
        r.post_tool_use(post("t", "r")).await,
        PostOutcome {
            observation: "r+x+y".into(),
            error: false
        }
    );
}

#[tokio::test]
async fn glob_filter_selects_tools() {
    let log = Log::default();
    let r = HookRunner::new(vec![
        probe(&log, "db", Act::Block("db blocked"))
            .filter("db_*")
            .unwrap(),
        probe(&log, "range", Act::Allow).filter("[a-c]*").unwrap(),
    ]);
    assert!(matches!(
        r.pre_tool_use(&mut ctx("db_query")).await,
        PreOutcome::Blocked(_)
    ));
    assert_eq!(taken(&log), ["db"]);
    assert!(matches!(
        r.pre_tool_use(&mut ctx("calculator")).await,
        PreOutcome::Allowed(_)
    ));
    assert_eq!(taken(&log), ["range"]);
    assert!(matches!(
        r.pre_tool_use(&mut ctx("web")).await,
        PreOutcome::Allowed(_)
    ));
    assert!(taken(&log).is_empty());
    assert!(HookEntry::new(Arc::new(ReadOnlyHook))
        .filter("[oops")
        .is_err());
}

#[tokio::test]
async fn timeout_follows_the_failure_policy() {
    let log = Log::default();
    let short = Duration::from_millis(50);
    let open = HookRunner::new(vec![
        probe(&log, "slow", Act::Hang).timeout(short),
        probe(&log, "next", Act::Tag("n")).priority(1),
    ]);
    assert_eq!(
        open.pre_tool_use(&mut ctx("t")).await,
        PreOutcome::Allowed(json!({"q": 1, "tags": ["n"]}))
    );
    assert_eq!(open.post_tool_use(post("t", "o")).await.observation, "o+n");
    let closed = HookRunner::new(vec![probe(&log, "slow", Act::Hang)
        .timeout(short)
        .policy(FailurePolicy::FailClosed)]);
    let PreOutcome::Blocked(reason) = closed.pre_tool_use(&mut ctx("t")).await else {
        panic!("a fail-closed timeout must block");
    };
    assert!(
        reason.contains("'slow'") && reason.contains("timed out"),
        "{reason}"
    );
    assert!(closed.post_tool_use(post("t", "o")).await.error);
}

#[tokio::test]
async fn failures_are_ignored_fail_open_and_block_fail_closed() {
    let log = Log::default();
    let open = HookRunner::new(vec![
        probe(&log, "bad", Act::Fail),
        probe(&log, "next", Act::Allow).priority(1),
    ]);
    assert_eq!(
        open.pre_tool_use(&mut ctx("t")).await,
        PreOutcome::Allowed(json!({"q": 1}))
    );
    assert_eq!(taken(&log), ["bad", "next"]);
    let post_open = open.post_tool_use(post("t", "result")).await;
    assert_eq!(
        (post_open.observation.as_str(), post_open.error),
        ("result", false)
    );
    taken(&log);

    let closed = HookRunner::new(vec![
        probe(&log, "bad", Act::Fail).policy(FailurePolicy::FailClosed),
        probe(&log, "next", Act::Tag("n")).priority(1),
    ]);
    let PreOutcome::Blocked(reason) = closed.pre_tool_use(&mut ctx("t")).await else {
        panic!("a fail-closed failure must block");
    };
    assert!(
        reason.contains("'bad'") && reason.contains("boom"),
        "{reason}"
    );
    assert_eq!(taken(&log), ["bad"]);
    let post_closed = closed.post_tool_use(post("t", "secret result")).await;
    assert!(post_closed.error);
    assert!(!post_closed.observation.contains("secret"));
    assert_eq!(
        taken(&log),
        ["bad"],
        "the Post chain stops at a fail-closed failure"
    );
}

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
    for p in [post("calc", "42"), failed, blocked] {
        r.post_tool_use(p).await;
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
    let out = r.post_tool_use(post("web", "abcdef")).await;
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
