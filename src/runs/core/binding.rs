//! What a run of a conversation is bound to (docs/protocols.md): the model asked for (the
//! conversation's, else its agent's, else the default), the conversation's tools or its agent's
//! tool globs, the iteration cap and the system prompt — and the engines built from that: a
//! ReAct agent, and the setup of a DAG run.

use std::sync::Arc;

use super::manager::{RunError, RunManager};
use crate::agent::{AgentConfig, Mode, ReActAgent};
use crate::config::AgentSpec;
use crate::dag::DagSetup;
use crate::domain::Engine;
use crate::llm::sampling::Sampled;
use crate::llm::Llm;
use crate::runs::budget::ledger::Ledger;
use crate::store::Conversation;
use crate::tools::ToolRegistry;

/// A run's model, tools, settings and prompt, settled once at its start.
pub(in crate::runs) struct Binding {
    /// The model's registry name.
    pub model: String,
    pub llm: Arc<dyn Llm>,
    pub tools: ToolRegistry,
    pub cfg: AgentConfig,
    pub system_prompt: Option<String>,
    /// The engine the conversation's agent asks for, if any.
    pub engine: Option<Engine>,
    /// Every LLM call of the run goes through it (budgets, cost, usage).
    pub ledger: Arc<Ledger>,
}

impl RunManager {
    /// Binds a run of `conv` to the model `asked` for (the agent's, else the default, when
    /// `None`), the conversation's tools and system prompt, its named agent filling in what
    /// those leave unset.
    pub(in crate::runs) async fn bind(
        &self,
        conv: &Conversation,
        asked: Option<&str>,
        max_iterations: Option<u32>,
        ledger: Arc<Ledger>,
    ) -> Result<Binding, RunError> {
        let agent = self.conversation_agent(conv).await?;
        let spec = agent.as_deref();
        let asked = asked.or(spec.and_then(|a| a.model.as_deref()));
        let (model, llm) = self
            .models
            .resolve(asked)
            .ok_or_else(|| RunError::UnknownModel(asked.unwrap_or_default().to_string()))?;
        // One snapshot: an MCP list change mid-start cannot mix two registries.
        let registry = self.tools();
        let tools = match (&conv.tools, spec) {
            (Some(names), _) => registry.filtered(names),
            (None, Some(a)) if a.selects_tools() => {
                let names: Vec<String> = registry
                    .names()
                    .into_iter()
                    .filter(|n| a.allows_tool(n))
                    .collect();
                registry.filtered(&names)
            }
            (None, _) => registry,
        };
        let mut cfg = self.base.clone();
        if let Some(m) = max_iterations.or(spec.and_then(|a| a.max_iterations)) {
            cfg.max_iterations = m;
        }
        if let Some(check) = spec.and_then(|a| a.completion_check) {
            cfg.completion_check = check;
        }
        let system_prompt = conv
            .system_prompt
            .clone()
            .or_else(|| spec.and_then(|a| a.system_prompt.clone()));
        // The agent's sampling and synthesis policy over the model's, in every call of the
        // run (loop, synthesis, structured calls, DAG steps on this model).
        let llm = Sampled::agent(
            ledger.wrap(&model.name, llm),
            spec.map(|a| a.sampling).unwrap_or_default(),
            spec.and_then(|a| a.synthesis),
        );
        Ok(Binding {
            model: model.name.clone(),
            llm,
            tools,
            cfg,
            system_prompt,
            engine: spec.and_then(|a| a.engine),
            ledger,
        })
    }

    /// The agent `conv` runs (its recorded version of an API agent), if it names one that
    /// still exists.
    async fn conversation_agent(
        &self,
        conv: &Conversation,
    ) -> Result<Option<Arc<AgentSpec>>, RunError> {
        let Some(name) = conv.agent.as_deref() else {
            return Ok(None);
        };
        let found = self
            .catalog
            .pinned(&conv.owner, name, conv.agent_version)
            .await?;
        Ok(found.map(|a| a.spec))
    }

    /// The ReAct agent of a bound run.
    pub(in crate::runs) fn react_agent(&self, b: &Binding, mode: Option<Mode>) -> ReActAgent {
        let agent = ReActAgent::new(
            b.llm.clone(),
            b.tools.clone(),
            self.hooks.clone(),
            b.cfg.clone(),
        )
        .with_mode(mode)
        .with_system_prompt(b.system_prompt.clone());
        match self.compact_for(b) {
            Some(c) => agent.with_compact_llm(c),
            None => agent,
        }
    }

    /// The compaction model, its calls on the run's ledger.
    fn compact_for(&self, b: &Binding) -> Option<Arc<dyn Llm>> {
        let c = self.compact_llm.clone()?;
        let name = self.base.compact_model.as_deref().unwrap_or_default();
        Some(b.ledger.wrap(name, c))
    }

    /// The DAG setup of a bound run.
    pub(in crate::runs) fn dag_setup(&self, b: Binding, mode: Option<Mode>) -> DagSetup {
        let compact_llm = self.compact_for(&b);
        DagSetup {
            models: b.ledger.wrap_registry(&self.models),
            llm: b.llm,
            model_name: b.model,
            tools: b.tools,
            hooks: self.hooks.clone(),
            react: b.cfg,
            dag: self.settings.dag.clone(),
            mode,
            system_prompt: b.system_prompt,
            compact_llm,
        }
    }

    /// The ReAct agent of a run of `conv` and its model's registry name (recovery resumes
    /// with it).
    pub(in crate::runs) async fn agent_for(
        &self,
        conv: &Conversation,
        asked: Option<&str>,
        mode: Option<Mode>,
        max_iterations: Option<u32>,
        ledger: Arc<Ledger>,
    ) -> Result<(String, ReActAgent), RunError> {
        let bound = self.bind(conv, asked, max_iterations, ledger).await?;
        let agent = self.react_agent(&bound, mode);
        Ok((bound.model, agent))
    }
}
