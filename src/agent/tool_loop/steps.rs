//! One response processed, in each mode: native `tool_calls` (or calls
//! written in the content), and the JSON protocol's one action per response (one call, several,
//! or the final answer).

use super::calls::NativeReply;
use super::*;
use crate::agent::prompts::unlabelled;

impl LoopRun<'_> {
    pub(super) async fn native_step(&mut self, r: ChatResponse) -> Next {
        let reasoning = if r.content.trim().is_empty() {
            r.reasoning_content.clone().unwrap_or_default()
        } else {
            r.content.clone()
        };
        let written = if r.tool_calls.is_empty() {
            self.calls_in_content(&r.content)
        } else {
            None
        };
        if r.tool_calls.is_empty() && written.is_none() {
            return self.native_answer(reasoning, r.continuity);
        }
        // Calls recovered from the content are stored in the normal form, without the text
        // they were written in, so the history reads to the provider as its own tool calls.
        let (content, calls, reasoning) = match written {
            Some(calls) => (
                String::new(),
                calls,
                r.reasoning_content.unwrap_or_default(),
            ),
            None => (r.content, r.tool_calls, reasoning),
        };
        self.thinking(reasoning);
        let native = NativeReply {
            content,
            continuity: r.continuity,
        };
        self.run_calls(calls, Some(native)).await
    }

    /// A reply without tool calls: the final answer, unless interrupts or the completion
    /// check send the loop round again.
    fn native_answer(
        &mut self,
        answer: String,
        continuity: Option<crate::llm::Continuity>,
    ) -> Next {
        self.messages
            .push(Message::assistant(answer.clone()).with_continuity(continuity));
        if self.drain_interrupts() {
            return Next::Continue;
        }
        if self.check_completion() {
            return Next::Continue;
        }
        Next::Final(answer)
    }

    /// Records executed calls and appends the safeguards' messages (after all tool results).
    /// Takes the calls by value: their records move into the run's steps, uncopied. True when
    /// every call of the reply is stuck ([`CycleDetector::stuck`]): the reply asked for nothing
    /// but results the model already had, more often than the cycle warning allows.
    pub(super) fn after_tools(&mut self, executed: Vec<Executed>) -> bool {
        // A copy answers its call with the result of an identical one: it is that call's
        // execution, in its place in the reply.
        let ran = executed
            .iter()
            .filter(|e| e.ran || e.copy)
            .map(|e| &e.record);
        self.last_run
            .record(ran.map(|r| (r.tool.as_str(), &r.arguments, r.observation.as_str())));
        let stuck = !executed.is_empty() && !self.pausing;
        let mut stuck_all = stuck;
        for e in executed {
            self.tool_calls += 1;
            // An unknown tool called again and again is as stuck as a tool that ran.
            let unknown = self.executor.tools.get(&e.record.tool).is_none();
            let r = &e.record;
            if e.ran {
                self.reflection.record(&r.tool, &r.arguments);
            }
            if (e.ran || unknown) && !e.copy && !self.pausing {
                if let Some(cycle) =
                    self.cycles
                        .record(&e.record.tool, &e.record.arguments, &e.record.observation)
                {
                    self.messages
                        .push(Message::user(prompts::cycle_warning(&e.record.tool, cycle)));
                    self.safeguard(SafeguardKind::CycleWarning, Some(e.record.tool.clone()));
                }
            }
            stuck_all &= self.cycles.stuck(&e.record.tool, &e.record.arguments);
            self.steps.push(e.record);
        }
        if stuck_all {
            return true;
        }
        if self.reflection.due() && !self.pausing {
            self.messages
                .push(Message::user(prompts::reflection(&self.query)));
            self.safeguard(SafeguardKind::Reflection, None);
        }
        false
    }

    /// Tool calls the model wrote as text, when they name only tools of the run.
    /// The model's text before its calls as a `thinking` step; none when it wrote nothing (an
    /// empty step each iteration showed the user nothing but noise).
    fn thinking(&self, reasoning: String) {
        if reasoning.trim().is_empty() {
            return;
        }
        self.emit(StepEvent::Thinking {
            iteration: self.iterations,
            reasoning,
            dag_step: None,
        });
    }

    pub(super) fn calls_in_content(&self, content: &str) -> Option<Vec<crate::llm::ToolCall>> {
        if self.tool_defs.is_empty() {
            return None;
        }
        let tools = &self.executor.tools;
        let calls = parse_content_calls(content, |name| {
            tools.resolve(name).is_some() || self.is_client(name)
        })?;
        tracing::debug!(calls = calls.len(), "tool calls recovered from the content");
        Some(calls)
    }

    pub(super) async fn json_step(&mut self, r: ChatResponse) -> Next {
        let content = r.content.clone();
        self.messages
            .push(Message::assistant(content.clone()).with_continuity(r.continuity.clone()));
        let interrupted = self.drain_interrupts();
        let Some(action) = parse_action(&content, &self.json_tools) else {
            if self.last_parse_failed && !interrupted {
                return Next::Final(
                    cut_answer(&content).unwrap_or_else(|| unlabelled(&content).to_string()),
                );
            }
            self.last_parse_failed = true;
            let retry = prompts::reformat_request(&action_problem(&content), &self.tool_names);
            self.messages.push(Message::user(retry));
            return Next::Continue;
        };
        self.last_parse_failed = false;
        match action {
            Action::FinalAnswer { answer, .. } => {
                if interrupted {
                    return Next::Continue;
                }
                if self.check_completion() {
                    return Next::Continue;
                }
                Next::Final(answer)
            }
            Action::ToolCall { reasoning, calls } => {
                let reasoning = if reasoning.trim().is_empty() {
                    r.reasoning_content.clone().unwrap_or_default()
                } else {
                    reasoning
                };
                // A reply of only the caller's calls shows no thinking, as it did with one call.
                if calls.iter().any(|c| !self.is_client(&c.tool_name)) {
                    self.thinking(reasoning);
                }
                let calls = calls
                    .into_iter()
                    .map(|c| crate::llm::ToolCall {
                        id: String::new(),
                        name: c.tool_name,
                        arguments: c.tool_args.to_string(),
                    })
                    .collect();
                self.run_calls(calls, None).await
            }
        }
    }
}
