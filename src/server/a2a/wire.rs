//! A2A's objects on either wire: 1.0 writes the protobuf JSON of `a2a.proto` (`TASK_STATE_*`,
//! `ROLE_*`, a part is `{text}` or `{data}`, each streamed result wrapped in a
//! `StreamResponse`), 0.3 its JSON schema (`kind` on every object, kebab-case states, a
//! `final` flag on status updates). Everything else (ids, the mapping to runs) is the same.

use chrono::{SecondsFormat, Utc};
use serde_json::{json, Value};

use super::rpc::Wire;
use crate::domain::RunStatus;

/// The one artifact of a task: the run's answer.
pub const ANSWER_ARTIFACT: &str = "answer";

/// A task's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Submitted,
    Working,
    InputRequired,
    Completed,
    Failed,
    Canceled,
}

impl State {
    /// The state of a run that has ended with `status` (`Running` is working).
    pub fn of(status: RunStatus) -> Self {
        match status {
            RunStatus::Running => State::Working,
            RunStatus::Completed | RunStatus::MaxIterations | RunStatus::BudgetExceeded => {
                State::Completed
            }
            RunStatus::Failed => State::Failed,
            RunStatus::Cancelled => State::Canceled,
            RunStatus::RequiresAction => State::InputRequired,
        }
    }

    /// Whether nothing follows it.
    pub fn is_terminal(self) -> bool {
        matches!(self, State::Completed | State::Failed | State::Canceled)
    }

    /// Whether a stream ends on it (terminal, or waiting for the client).
    pub fn ends_stream(self) -> bool {
        self.is_terminal() || self == State::InputRequired
    }
}

/// The task, message and event shapes of one wire.
#[derive(Clone, Copy, Debug)]
pub struct Shapes(pub Wire);

impl Shapes {
    pub fn state(self, state: State) -> &'static str {
        match (self.0, state) {
            (Wire::V1, State::Submitted) => "TASK_STATE_SUBMITTED",
            (Wire::V1, State::Working) => "TASK_STATE_WORKING",
            (Wire::V1, State::InputRequired) => "TASK_STATE_INPUT_REQUIRED",
            (Wire::V1, State::Completed) => "TASK_STATE_COMPLETED",
            (Wire::V1, State::Failed) => "TASK_STATE_FAILED",
            (Wire::V1, State::Canceled) => "TASK_STATE_CANCELED",
            (Wire::V03, State::Submitted) => "submitted",
            (Wire::V03, State::Working) => "working",
            (Wire::V03, State::InputRequired) => "input-required",
            (Wire::V03, State::Completed) => "completed",
            (Wire::V03, State::Failed) => "failed",
            (Wire::V03, State::Canceled) => "canceled",
        }
    }

    pub fn text_part(self, text: &str) -> Value {
        match self.0 {
            Wire::V1 => json!({"text": text}),
            Wire::V03 => json!({"kind": "text", "text": text}),
        }
    }

    pub fn data_part(self, data: Value) -> Value {
        match self.0 {
            Wire::V1 => json!({"data": data}),
            Wire::V03 => json!({"kind": "data", "data": data}),
        }
    }

    /// A message of the agent (`user` false) or the user in a task.
    pub fn message(self, id: &str, user: bool, parts: Vec<Value>, task: &Ids) -> Value {
        let role = match (self.0, user) {
            (Wire::V1, true) => "ROLE_USER",
            (Wire::V1, false) => "ROLE_AGENT",
            (Wire::V03, true) => "user",
            (Wire::V03, false) => "agent",
        };
        let mut message = json!({"messageId": id, "role": role, "parts": parts,
                                 "taskId": task.task, "contextId": task.context});
        if self.0 == Wire::V03 {
            message["kind"] = json!("message");
        }
        message
    }

    pub fn status(self, state: State, message: Option<Value>) -> Value {
        let now = Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true);
        let mut status = json!({"state": self.state(state), "timestamp": now});
        if let Some(m) = message {
            status["message"] = m;
        }
        status
    }

    /// The answer artifact holding `text`.
    pub fn answer(self, text: &str) -> Value {
        json!({"artifactId": ANSWER_ARTIFACT, "name": ANSWER_ARTIFACT,
               "parts": [self.text_part(text)]})
    }

    pub fn task(
        self,
        ids: &Ids,
        status: Value,
        artifacts: Vec<Value>,
        history: Vec<Value>,
    ) -> Value {
        let mut task = json!({"id": ids.task, "contextId": ids.context, "status": status,
                              "artifacts": artifacts, "history": history});
        if self.0 == Wire::V03 {
            task["kind"] = json!("task");
        }
        task
    }

    /// A `SendMessage` result, or one streamed result that is a whole task.
    pub fn task_result(self, task: Value) -> Value {
        match self.0 {
            Wire::V1 => json!({"task": task}),
            Wire::V03 => task,
        }
    }

    /// A streamed status update (`final` on 0.3 when the stream ends with it).
    pub fn status_update(self, ids: &Ids, status: Value, last: bool) -> Value {
        let update = json!({"taskId": ids.task, "contextId": ids.context, "status": status});
        match self.0 {
            Wire::V1 => json!({"statusUpdate": update}),
            Wire::V03 => {
                let mut update = update;
                update["kind"] = json!("status-update");
                update["final"] = json!(last);
                update
            }
        }
    }

    /// A streamed chunk of the answer artifact: the object `stream`'s hand-written chunks
    /// must read as (they are written without it, one per token).
    #[cfg(test)]
    pub fn artifact_update(self, ids: &Ids, text: &str, append: bool, last: bool) -> Value {
        let update = json!({"taskId": ids.task, "contextId": ids.context,
                            "artifact": self.answer(text), "append": append, "lastChunk": last});
        match self.0 {
            Wire::V1 => json!({"artifactUpdate": update}),
            Wire::V03 => {
                let mut update = update;
                update["kind"] = json!("artifact-update");
                update
            }
        }
    }
}

/// A task's ids: the run and its conversation.
#[derive(Clone, Debug)]
pub struct Ids {
    pub task: String,
    pub context: String,
}
