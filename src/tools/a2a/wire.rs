//! The JSON-RPC wire of A2A as a client needs it, in both spellings a remote may speak: v1.0
//! (PascalCase methods, the `A2A-Version: 1.0` header, `ROLE_USER`, each result wrapping one
//! of `task`, `message`, `statusUpdate`, `artifactUpdate`, states `TASK_STATE_*`) and v0.3
//! (`message/stream`, `role: "user"`, a `kind` on parts and results, states such as
//! `input-required`). Replies are read leniently into one [`Update`]: fields reagent does not
//! use are ignored, so a remote a minor version ahead still works.

use serde::Deserialize;
use serde_json::{json, Value};

/// Which spelling of the protocol a remote speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1,
    V03,
}

/// The methods the client calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Send,
    Stream,
    Get,
    Cancel,
}

impl Version {
    pub fn method(self, method: Method) -> &'static str {
        match (self, method) {
            (Version::V1, Method::Send) => "SendMessage",
            (Version::V1, Method::Stream) => "SendStreamingMessage",
            (Version::V1, Method::Get) => "GetTask",
            (Version::V1, Method::Cancel) => "CancelTask",
            (Version::V03, Method::Send) => "message/send",
            (Version::V03, Method::Stream) => "message/stream",
            (Version::V03, Method::Get) => "tasks/get",
            (Version::V03, Method::Cancel) => "tasks/cancel",
        }
    }
}

/// JSON-RPC: the method does not exist (a v0.3 server asked a v1.0 name).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// A2A: the operation is not supported (streaming asked of a server that does not stream).
pub const UNSUPPORTED_OPERATION: i64 = -32004;

/// A `SendMessage`/`SendStreamingMessage` request carrying `text` as a new user message.
pub fn send(version: Version, method: Method, text: &str) -> Value {
    let id = uuid::Uuid::new_v4().to_string();
    let message = match version {
        Version::V1 => json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]}),
        Version::V03 => json!({
            "kind": "message", "messageId": id, "role": "user",
            "parts": [{"kind": "text", "text": text}],
        }),
    };
    request(version, method, json!({ "message": message }))
}

/// A `GetTask` or `CancelTask` request for `task_id`.
pub fn for_task(version: Version, method: Method, task_id: &str) -> Value {
    request(version, method, json!({ "id": task_id }))
}

fn request(version: Version, method: Method, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": version.method(method), "params": params})
}

/// The state of a remote task, read from either spelling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskState {
    Submitted,
    Working,
    InputRequired,
    AuthRequired,
    Completed,
    Failed,
    Canceled,
    Rejected,
    Other(String),
}

impl TaskState {
    /// `TASK_STATE_INPUT_REQUIRED`, `input-required` and `INPUT_REQUIRED` alike.
    pub fn parse(raw: &str) -> Self {
        let lower = raw.to_ascii_lowercase().replace('_', "-");
        match lower.strip_prefix("task-state-").unwrap_or(&lower) {
            "submitted" => Self::Submitted,
            "working" => Self::Working,
            "input-required" => Self::InputRequired,
            "auth-required" => Self::AuthRequired,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "canceled" | "cancelled" => Self::Canceled,
            "rejected" => Self::Rejected,
            other => Self::Other(other.to_string()),
        }
    }
}

/// The text of an artifact (its text parts joined).
#[derive(Clone, Debug, PartialEq)]
pub struct Artifact {
    pub id: Option<String>,
    pub text: String,
}

/// One result of the remote, whichever its spelling.
#[derive(Clone, Debug, PartialEq)]
pub enum Update {
    /// A snapshot of the task: the first event of a stream, or what a send or get answers.
    /// `history` holds the texts of the agent's messages so far.
    Task {
        id: String,
        state: TaskState,
        note: Option<String>,
        artifacts: Vec<Artifact>,
        history: Vec<String>,
    },
    Status {
        task_id: String,
        state: TaskState,
        note: Option<String>,
    },
    Artifact {
        artifact: Artifact,
        append: bool,
    },
    /// A direct answer, without a task.
    Message {
        text: String,
    },
}

/// A JSON-RPC reply: a result, or the remote's error.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    Result(Update),
    Error { code: i64, message: String },
}

#[derive(Deserialize)]
struct Part {
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    role: String,
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize)]
struct Status {
    #[serde(default)]
    state: String,
    #[serde(default)]
    message: Option<Message>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactWire {
    #[serde(default)]
    artifact_id: Option<String>,
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize)]
struct TaskWire {
    id: String,
    status: Status,
    #[serde(default)]
    artifacts: Vec<ArtifactWire>,
    #[serde(default)]
    history: Vec<Message>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatusUpdate {
    #[serde(default)]
    task_id: String,
    status: Status,
}

#[derive(Deserialize)]
struct ArtifactUpdate {
    artifact: ArtifactWire,
    #[serde(default)]
    append: bool,
}

fn text_of(parts: &[Part]) -> String {
    let texts: Vec<&str> = parts.iter().filter_map(|p| p.text.as_deref()).collect();
    texts.join("\n")
}

fn note(status: &Status) -> Option<String> {
    let text = text_of(&status.message.as_ref()?.parts);
    (!text.trim().is_empty()).then_some(text)
}

fn artifact(a: ArtifactWire) -> Artifact {
    Artifact {
        text: text_of(&a.parts),
        id: a.artifact_id,
    }
}

fn parse<T: for<'de> Deserialize<'de>>(what: &str, v: &Value) -> Result<T, String> {
    T::deserialize(v).map_err(|e| format!("a malformed {what}: {e}"))
}

fn task(v: &Value) -> Result<Update, String> {
    let t: TaskWire = parse("task", v)?;
    let history = t
        .history
        .iter()
        .filter(|m| m.role.to_ascii_lowercase().contains("agent"))
        .map(|m| text_of(&m.parts))
        .filter(|t| !t.trim().is_empty())
        .collect();
    Ok(Update::Task {
        state: TaskState::parse(&t.status.state),
        note: note(&t.status),
        artifacts: t.artifacts.into_iter().map(artifact).collect(),
        history,
        id: t.id,
    })
}

fn status(v: &Value) -> Result<Update, String> {
    let s: StatusUpdate = parse("status update", v)?;
    Ok(Update::Status {
        state: TaskState::parse(&s.status.state),
        note: note(&s.status),
        task_id: s.task_id,
    })
}

fn artifact_update(v: &Value) -> Result<Update, String> {
    let a: ArtifactUpdate = parse("artifact update", v)?;
    Ok(Update::Artifact {
        artifact: artifact(a.artifact),
        append: a.append,
    })
}

fn message(v: &Value) -> Result<Update, String> {
    let m: Message = parse("message", v)?;
    Ok(Update::Message {
        text: text_of(&m.parts),
    })
}

/// The update a result carries: v0.3 says which by `kind`, v1.0 by the one key it wraps;
/// `GetTask` and `CancelTask` answer the bare task in both.
fn update(result: &Value) -> Result<Update, String> {
    if let Some(kind) = result.get("kind").and_then(Value::as_str) {
        return match kind {
            "task" => task(result),
            "status-update" => status(result),
            "artifact-update" => artifact_update(result),
            "message" => message(result),
            other => Err(format!("a result of unknown kind {other:?}")),
        };
    }
    type Read = fn(&Value) -> Result<Update, String>;
    let wrapped: [(&str, Read); 4] = [
        ("task", task),
        ("statusUpdate", status),
        ("artifactUpdate", artifact_update),
        ("message", message),
    ];
    for (key, read) in wrapped {
        if let Some(inner) = result.get(key) {
            return read(inner);
        }
    }
    if result.get("status").is_some() && result.get("id").is_some() {
        return task(result);
    }
    Err("a result that is none of task, message, statusUpdate, artifactUpdate".into())
}

/// Reads one JSON-RPC reply (a whole body, or one SSE event's data).
pub fn reply(text: &str) -> Result<Reply, String> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| format!("a reply that is not JSON: {e}"))?;
    if let Some(error) = v.get("error") {
        return Ok(Reply::Error {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("no message")
                .to_string(),
        });
    }
    match v.get("result") {
        Some(result) => update(result).map(Reply::Result),
        None => Err("a reply with neither result nor error".into()),
    }
}
