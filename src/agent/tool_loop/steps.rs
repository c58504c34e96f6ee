//! One response processed, in each mode: native `tool_calls` (or calls
//! written in the content), and the JSON protocol's one action per response.

use super::*;
use crate::agent::caller_tools::is_caller_tool;

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
        let (content, mut calls, reasoning) = match written {
            Some(calls) => (
                String::new(),
                calls,
                r.reasoning_content.unwrap_or_default(),
            ),
            None => (r.content, r.tool_calls, reasoning),
        };
        self.thinking(reasoning);
        let asked = calls.len();
        calls.truncate(self.calls_allowed());
        let ran = calls.len();
        self.call_ids.assign(self.iterations, &mut calls);
        let client = self.caller_calls(&calls);
        self.pausing = !client.is_empty();
        let pending = self.pending_calls(&mut calls);
        let pending_none = pending.is_empty();
        // The caller's calls stay in the assistant message: their results come with the
        // continuation, right after the run's own.
        self.messages
            .push(Message::assistant_tool_calls(content, calls).with_continuity(r.continuity));
        let batch = self.execute(pending).await;
        if batch.stopped {
            return self.stop_repeated(batch);
        }
        let (executed, cancelled) = (batch.executed, batch.cancelled);
        for e in &executed {
            self.messages.push(
                Message::tool(e.record.call_id.clone(), e.record.observation.clone())
                    .failed(e.record.error),
            );
        }
        let stuck = self.after_tools(executed);
        if cancelled {
            self.cancelled();
            return Next::Stop;
        }
        if !client.is_empty() {
            // Only the caller's calls, all of them stuck: no pause for results already known.
            if pending_none && self.callers_stuck(&client) {
                self.stop_stuck();
                return Next::Stop;
            }
            return self.pause(client).await;
        }
        if stuck {
            self.stop_stuck();
            return Next::Stop;
        }
        self.calls_dropped(asked, ran);
        self.drain_interrupts();
        Next::Continue
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

    /// The run's own calls of a reply, to execute (the caller's wait for the caller). They
    /// read the arguments; the reply's calls then move into the history uncopied (a reply's
    /// arguments may be megabytes).
    fn pending_calls(&self, calls: &mut [crate::llm::ToolCall]) -> Vec<PendingCall> {
        let max_args = self.config.max_tool_arguments_bytes;
        calls
            .iter_mut()
            .filter(|c| !is_caller_tool(&self.client_tools, &c.name))
            .map(|c| PendingCall {
                call_id: c.id.clone(),
                tool: c.name.clone(),
                arguments: parse_arguments(&mut c.arguments, max_args),
            })
            .collect()
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
                return Next::Final(cut_answer(&content).unwrap_or(content));
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
            Action::ToolCall {
                reasoning,
                tool_name,
                tool_args,
            } => {
                if self.is_client(&tool_name) {
                    let call = CallerCall {
                        call_id: self.call_ids.next(self.iterations),
                        name: tool_name,
                        arguments: tool_args.to_string(),
                    };
                    if self.callers_stuck(std::slice::from_ref(&call)) {
                        self.stop_stuck();
                        return Next::Stop;
                    }
                    return self.pause(vec![call]).await;
                }
                let reasoning = if reasoning.trim().is_empty() {
                    r.reasoning_content.clone().unwrap_or_default()
                } else {
                    reasoning
                };
                self.thinking(reasoning);
                let call = PendingCall {
                    call_id: self.call_ids.next(self.iterations),
                    tool: tool_name,
                    arguments: Ok(tool_args),
                };
                let batch = self.execute(vec![call]).await;
                if batch.stopped {
                    return self.stop_repeated(batch);
                }
                let (executed, cancelled) = (batch.executed, batch.cancelled);
                for e in &executed {
                    self.messages
                        .push(Message::user(prompts::observation(&e.record.observation)));
                }
                let stuck = self.after_tools(executed);
                if cancelled {
                    self.cancelled();
                    return Next::Stop;
                }
                if stuck {
                    self.stop_stuck();
                    return Next::Stop;
                }
                Next::Continue
            }
        }
    }
}

/// Tool-call arguments from the provider: empty means `{}`; invalid JSON is kept raw so the
/// LLM gets an error observation instead of a crash. Arguments over `max` bytes are not parsed
/// nor kept, in the call or in the history: only their size is ([`prompts::omitted_arguments`]).
fn parse_arguments(raw: &mut String, max: usize) -> Result<Value, String> {
    if raw.len() > max {
        let kept = prompts::omitted_arguments(raw.len(), max);
        // The history keeps valid JSON in place of the arguments it drops.
        *raw = serde_json::json!({ "omitted": kept }).to_string();
        return Err(kept);
    }
    if raw.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_str(raw).map_err(|_| raw.to_string())
}
