//! Hooks as the LLM and the tool see them: a blocked call and a rewritten one.

use super::*;
use reagent::agent::StepRecord;

struct Blocker;
#[async_trait]
impl Hook for Blocker {
    fn name(&self) -> &str {
        "blocker"
    }
    async fn pre_tool_use(&self, _: &HookContext) -> Result<PreVerdict, HookError> {
        Ok(PreVerdict::Block("organisation is read-only".into()))
    }
}

struct Rewriter;
#[async_trait]
impl Hook for Rewriter {
    fn name(&self) -> &str {
        "rewriter"
    }
    async fn pre_tool_use(&self, ctx: &HookContext) -> Result<PreVerdict, HookError> {
        let mut a = ctx.arguments.clone();
        a["x"] = json!("rewritten");
        Ok(PreVerdict::Rewrite(a))
    }
    async fn post_tool_use(&self, ctx: &PostContext) -> Result<PostVerdict, HookError> {
        Ok(PostVerdict::Rewrite(format!(
            "summary of {} chars",
            ctx.observation.len()
        )))
    }
}

/// Runs one `lookup {"x":"orig"}` call (the tool answers `0123456789`), then `ok`, under `hook`;
/// the LLM, the tool and the events, to see what each of them got.
async fn one_lookup_under(
    hook: Arc<dyn Hook>,
) -> (Arc<ScriptedLlm>, Arc<FakeTool>, Vec<AgentEvent>) {
    let (llm, tool, ev, _) = one_lookup_with_steps(hook).await;
    (llm, tool, ev)
}

/// [`one_lookup_under`] with the run's step records.
async fn one_lookup_with_steps(
    hook: Arc<dyn Hook>,
) -> (
    Arc<ScriptedLlm>,
    Arc<FakeTool>,
    Vec<AgentEvent>,
    Vec<StepRecord>,
) {
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[("c", "lookup", r#"{"x":"orig"}"#)])
        .text("ok");
    let tool = FakeTool::new("lookup", "0123456789");
    let hooks = HookRunner::new(vec![HookEntry::new(hook)]);
    let h = Harness::new(
        llm.clone(),
        registry(vec![tool.clone()]),
        hooks,
        AgentConfig::default(),
    );
    let (result, ev) = h.run("q").await;
    (llm, tool, ev, result.steps)
}

#[tokio::test]
async fn hooks_block_and_rewrite_as_the_llm_and_tool_see_it() {
    let (llm, tool, ev) = one_lookup_under(Arc::new(Blocker)).await;
    assert_eq!(tool.call_count(), 0);
    let obs = llm.chat_requests()[1]
        .messages
        .last()
        .unwrap()
        .content
        .clone();
    assert!(obs.contains("organisation is read-only"), "{obs}");
    assert!(matches!(
        tool_ends(&ev)[0],
        StepEvent::ToolEnd { blocked: true, .. }
    ));

    let (llm, tool, _, steps) = one_lookup_with_steps(Arc::new(Rewriter)).await;
    assert_eq!(tool.seen(), vec![json!({"x": "rewritten"})]);
    // The step keeps the call it records: its id, tool, the arguments as run, the observation
    // as the Post hook left it.
    assert_eq!(steps.len(), 1);
    assert_eq!(
        (steps[0].call_id.as_str(), steps[0].tool.as_str()),
        ("c", "lookup")
    );
    assert_eq!(steps[0].arguments, json!({"x": "rewritten"}));
    assert_eq!(steps[0].observation, "summary of 10 chars");
    assert_eq!(
        llm.chat_requests()[1].messages.last().unwrap().content,
        "summary of 10 chars"
    );
}
