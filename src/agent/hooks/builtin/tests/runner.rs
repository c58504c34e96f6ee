//! The hook runner: order, blocking, rewrites, tool filters, timeouts and failure policies.

use super::*;

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
    r.post_tool_use(&mut post("t", "o")).await;
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
        r.post_tool_use(&mut post("t", "r")).await,
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
    assert_eq!(
        open.post_tool_use(&mut post("t", "o")).await.observation,
        "o+n"
    );
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
    assert!(closed.post_tool_use(&mut post("t", "o")).await.error);
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
    let post_open = open.post_tool_use(&mut post("t", "result")).await;
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
    let post_closed = closed.post_tool_use(&mut post("t", "secret result")).await;
    assert!(post_closed.error);
    assert!(!post_closed.observation.contains("secret"));
    assert_eq!(
        taken(&log),
        ["bad"],
        "the Post chain stops at a fail-closed failure"
    );
}
