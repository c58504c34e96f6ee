//! Answer: a waiting run's answer. Caller-tool outputs start its continuation; approval
//! decisions must cover every approval the client was told about (a partial one would leave
//! the run waiting), and the client follows the run on from just after the last of them.

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt;
use uuid::Uuid;

use super::{Answer, Answered, Decision, Thread};
use crate::agent::events::{AgentEvent, EventView, StepEvent};
use crate::runs::core::manager::{RunError, RunManager};

impl RunManager {
    /// Answers the run `thread` waits on: [`Thread::After`] names the run; a conversation's or
    /// a client thread's is its latest run (waiting for outputs) or its active run (waiting on
    /// approvals). `record`: a facade's record of the request, stored with a continuation.
    /// `Conflict` when no run of the thread waits; `Invalid` for an approval answer that
    /// leaves one the client was told about unanswered.
    pub async fn answer(
        self: &Arc<Self>,
        owner: &str,
        thread: &Thread,
        answer: Answer,
        record: Option<String>,
    ) -> Result<Answered, RunError> {
        let conversation = match thread {
            Thread::New(_) => {
                return Err(RunError::Conflict(
                    "a new conversation has no run waiting".into(),
                ))
            }
            Thread::After(run) => {
                let Answer::Outputs(outputs) = answer else {
                    return Err(RunError::Invalid("approvals are answered by thread".into()));
                };
                return self.continued(owner, *run, outputs, record).await;
            }
            Thread::Conversation(id) => self.owned(owner, *id).await?,
            Thread::Client { id, agent, .. } => match self.client_thread(owner, id, agent).await? {
                (_, Some((conv, _))) => conv,
                (_, None) => match answer {
                    // As for any conversation the caller cannot see.
                    Answer::Outputs(_) => return Err(RunError::NotFound),
                    Answer::Approvals(_) => {
                        return Err(RunError::Conflict(
                            "no run of this thread is waiting".into(),
                        ))
                    }
                },
            },
        };
        match answer {
            Answer::Outputs(outputs) => {
                let run = self.waiting_run(owner, conversation.id).await?;
                self.continued(owner, run, outputs, record).await
            }
            Answer::Approvals(decisions) => {
                let run_id = conversation
                    .active_run_id
                    .ok_or_else(|| RunError::Conflict("no run of this thread is waiting".into()))?;
                let after = self.decide_all(owner, run_id, &decisions).await?;
                Ok(Answered::Resumed {
                    run_id,
                    conversation_id: conversation.id,
                    after,
                })
            }
        }
    }

    async fn continued(
        self: &Arc<Self>,
        owner: &str,
        run: Uuid,
        outputs: Vec<crate::agent::caller_tools::ToolOutput>,
        record: Option<String>,
    ) -> Result<Answered, RunError> {
        let started = self.continue_timed(owner, run, outputs, record).await?;
        Ok(Answered::Continued(started))
    }

    /// Decides every open approval of `run_id` the client was told about; the id of the event
    /// that announced the last of them. An approval the run is not waiting on is `Conflict`;
    /// one it was told about and left unanswered is `Invalid`.
    async fn decide_all(
        &self,
        owner: &str,
        run_id: Uuid,
        decisions: &[Decision],
    ) -> Result<u64, RunError> {
        let run = run_id.to_string();
        let pending: HashSet<String> = self
            .approvals_of(owner)
            .await?
            .into_iter()
            .filter(|(_, info)| info.run_id == run)
            .map(|(id, _)| id.to_string())
            .collect();
        let answered: HashSet<&str> = decisions.iter().map(|a| a.id.as_str()).collect();
        if let Some(gone) = decisions.iter().find(|a| !pending.contains(&a.id)) {
            return Err(RunError::Conflict(format!(
                "interrupt '{}' is not open (answered, timed out or unknown)",
                gone.id
            )));
        }
        let (cut, announced) = self.announced_until(owner, run_id, &answered).await?;
        let missing: Vec<&str> = announced
            .iter()
            .filter(|id| pending.contains(*id) && !answered.contains(id.as_str()))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(RunError::Invalid(format!(
                "resume must answer every open interrupt; missing: {}",
                missing.join(", ")
            )));
        }
        for a in decisions {
            let id = Uuid::parse_str(&a.id).map_err(|_| RunError::NotFound)?;
            self.decide_approval(owner, id, a.approve, a.reason.clone())
                .await?;
        }
        Ok(cut)
    }

    /// Reads the run's events until every id of `wanted` has had its `approval_required`: the
    /// id of the last of those events, and every approval announced up to it.
    async fn announced_until(
        &self,
        owner: &str,
        run_id: Uuid,
        wanted: &HashSet<&str>,
    ) -> Result<(u64, Vec<String>), RunError> {
        let mut events = self.events(owner, run_id, 0).await?;
        let mut seen = Vec::new();
        let mut left = wanted.len();
        while left > 0 {
            let Some(ev) = events.next().await else {
                return Err(RunError::Conflict(
                    "the run ended before its approvals".into(),
                ));
            };
            if let EventView::Agent(AgentEvent::Step(StepEvent::ApprovalRequired {
                approval_id,
                ..
            })) = ev.view()
            {
                if wanted.contains(approval_id.as_str()) {
                    left -= 1;
                    if left == 0 {
                        seen.push(approval_id);
                        return Ok((ev.id, seen));
                    }
                }
                seen.push(approval_id);
            }
        }
        Ok((0, seen))
    }
}
