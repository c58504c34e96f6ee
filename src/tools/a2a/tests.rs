use serde_json::json;
use url::Url;

use super::card::{card_url, read, Interface};
use super::wire::{reply, send, Artifact, Method, Reply, TaskState, Update, Version};

#[test]
fn states_read_in_both_spellings() {
    assert_eq!(
        TaskState::parse("TASK_STATE_INPUT_REQUIRED"),
        TaskState::InputRequired
    );
    assert_eq!(TaskState::parse("input-required"), TaskState::InputRequired);
    assert_eq!(TaskState::parse("completed"), TaskState::Completed);
    assert_eq!(TaskState::parse("TASK_STATE_CANCELED"), TaskState::Canceled);
    assert_eq!(
        TaskState::parse("paused"),
        TaskState::Other("paused".into())
    );
}

#[test]
fn requests_speak_the_remote_version() {
    let v1 = send(Version::V1, Method::Stream, "hi");
    assert_eq!(v1["method"], "SendStreamingMessage");
    assert_eq!(v1["params"]["message"]["role"], "ROLE_USER");
    assert_eq!(v1["params"]["message"]["parts"][0], json!({"text": "hi"}));
    let v03 = send(Version::V03, Method::Send, "hi");
    assert_eq!(v03["method"], "message/send");
    assert_eq!(v03["params"]["message"]["role"], "user");
    assert_eq!(v03["params"]["message"]["parts"][0]["kind"], "text");
}

#[test]
fn v1_stream_results_read_by_their_key() {
    let status = r#"{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t1","status":{"state":"TASK_STATE_WORKING","message":{"role":"ROLE_AGENT","parts":[{"text":"busy"}]}}}}}"#;
    assert_eq!(
        reply(status).unwrap(),
        Reply::Result(Update::Status {
            task_id: "t1".into(),
            state: TaskState::Working,
            note: Some("busy".into())
        })
    );
    let artifact = r#"{"result":{"artifactUpdate":{"taskId":"t1","artifact":{"artifactId":"a","parts":[{"text":"x"},{"text":"y"}]}}}}"#;
    assert_eq!(
        reply(artifact).unwrap(),
        Reply::Result(Update::Artifact {
            artifact: Artifact {
                id: Some("a".into()),
                text: "x\ny".into()
            },
            append: false
        })
    );
}

#[test]
fn v03_results_read_by_kind_and_bare_tasks_as_tasks() {
    let task = r#"{"result":{"kind":"task","id":"t","status":{"state":"failed","message":{"kind":"message","role":"agent","parts":[{"kind":"text","text":"broke"}]}},"history":[{"role":"user","parts":[{"text":"q"}]},{"role":"agent","parts":[{"text":"step"}]}]}}"#;
    let Reply::Result(Update::Task {
        state,
        note,
        history,
        ..
    }) = reply(task).unwrap()
    else {
        panic!("not a task")
    };
    assert_eq!(state, TaskState::Failed);
    assert_eq!(note.as_deref(), Some("broke"));
    assert_eq!(history, vec!["step".to_string()]);
    let bare = r#"{"result":{"id":"t","status":{"state":"TASK_STATE_CANCELED"}}}"#;
    assert!(matches!(
        reply(bare).unwrap(),
        Reply::Result(Update::Task {
            state: TaskState::Canceled,
            ..
        })
    ));
}

#[test]
fn errors_and_garbage() {
    assert_eq!(
        reply(r#"{"error":{"code":-32601,"message":"Method not found"},"id":1}"#).unwrap(),
        Reply::Error {
            code: -32601,
            message: "Method not found".into()
        }
    );
    assert!(reply("not json").is_err());
    assert!(reply(r#"{"result":{"kind":"mystery"}}"#).is_err());
    assert!(reply(r#"{"result":{"statusUpdate":{"status":"nope"}}}"#).is_err());
    assert!(reply(r#"{"id":1}"#).is_err());
}

#[test]
fn the_card_is_below_the_agent_url_unless_named() {
    let at = |u: &str| card_url(&Url::parse(u).unwrap()).to_string();
    assert_eq!(at("http://h:1"), "http://h:1/.well-known/agent-card.json");
    assert_eq!(
        at("http://h/a2a/x"),
        "http://h/a2a/x/.well-known/agent-card.json"
    );
    assert_eq!(
        at("http://h/a2a/x/"),
        "http://h/a2a/x/.well-known/agent-card.json"
    );
    assert_eq!(at("http://h/card.json"), "http://h/card.json");
}

#[test]
fn cards_of_both_versions_name_their_jsonrpc_interface() {
    let v1 = json!({
        "name": "a", "capabilities": {"streaming": true},
        "supportedInterfaces": [
            {"url": "http://h/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
            {"url": "http://h/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ]
    });
    assert_eq!(
        read(v1.to_string().as_bytes()).unwrap(),
        Interface {
            url: "http://h/rpc".into(),
            version: Version::V1,
            streaming: true
        }
    );
    let v03 = json!({"name": "a", "url": "http://h/old", "protocolVersion": "0.3.0"});
    assert_eq!(
        read(v03.to_string().as_bytes()).unwrap(),
        Interface {
            url: "http://h/old".into(),
            version: Version::V03,
            streaming: false
        }
    );
    let grpc_only = json!({"name": "a", "url": "http://h/g", "preferredTransport": "GRPC"});
    let err = read(grpc_only.to_string().as_bytes()).unwrap_err();
    assert!(err.contains("no JSON-RPC interface"), "{err}");
    assert!(read(b"[]").is_err());
}

mod calls {
    use std::sync::{Arc, Mutex};

    use reqwest::header::HeaderMap;
    use url::Url;

    use super::super::call::Call;
    use super::super::card::Endpoint;
    use super::super::wire::{Artifact, TaskState, Update, Version};
    use crate::tools::Progress;

    fn endpoint() -> Arc<Endpoint> {
        Arc::new(Endpoint {
            url: Url::parse("http://127.0.0.1:9/rpc").unwrap(),
            version: Version::V1,
            streaming: true,
            client: reqwest::Client::new(),
            headers: HeaderMap::new(),
        })
    }

    fn recorder() -> (Progress, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = seen.clone();
        (Progress::new(move |n| into.lock().unwrap().push(n)), seen)
    }

    fn status(state: TaskState, note: Option<&str>) -> Update {
        Update::Status {
            task_id: "t".into(),
            state,
            note: note.map(String::from),
        }
    }

    fn piece(id: &str, text: &str, append: bool) -> Update {
        Update::Artifact {
            artifact: Artifact {
                id: Some(id.into()),
                text: text.into(),
            },
            append,
        }
    }

    #[test]
    fn appended_chunks_join_their_artifact_and_artifacts_join_the_answer() {
        let (progress, seen) = recorder();
        let ep = endpoint();
        let mut call = Call::new("r", &ep, &progress);
        assert!(call.apply(status(TaskState::Working, Some("a"))).is_none());
        assert!(call.apply(status(TaskState::Working, Some("a"))).is_none());
        assert!(call.apply(piece("x", "one ", false)).is_none());
        assert!(call.apply(piece("x", "two", true)).is_none());
        assert!(call.apply(piece("y", "three", false)).is_none());
        let done = call.apply(status(TaskState::Completed, None)).unwrap();
        assert_eq!(done.unwrap(), "one two\n\nthree");
        assert_eq!(
            *seen.lock().unwrap(),
            ["a"],
            "a repeated note is reported once"
        );
    }

    #[test]
    fn a_completed_task_without_artifacts_answers_with_its_last_words() {
        let (progress, _) = recorder();
        let ep = endpoint();
        let mut call = Call::new("r", &ep, &progress);
        let done = call.apply(status(TaskState::Completed, Some("all good")));
        assert_eq!(done.unwrap().unwrap(), "all good");
    }

    #[test]
    fn ends_that_are_not_answers_are_errors_with_the_remotes_words() {
        for (state, expected) in [
            (TaskState::Failed, "the A2A agent 'r' failed: why"),
            (TaskState::Rejected, "the A2A agent 'r' failed: why"),
            (TaskState::Canceled, "canceled the task: why"),
            (TaskState::InputRequired, "needs more input: why"),
            (TaskState::AuthRequired, "requires authentication: why"),
        ] {
            let (progress, _) = recorder();
            let ep = endpoint();
            let mut call = Call::new("r", &ep, &progress);
            let err = call.apply(status(state, Some("why"))).unwrap().unwrap_err();
            assert!(err.to_string().contains(expected), "{err}");
        }
    }

    #[test]
    fn a_chatty_remote_is_cut_to_the_cap() {
        let (progress, seen) = recorder();
        let ep = endpoint();
        let mut call = Call::new("r", &ep, &progress);
        for i in 0..500 {
            call.apply(status(TaskState::Working, Some(&format!("n{i}"))));
        }
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 200);
        assert_eq!(seen[199], "(further updates of 'r' not shown)");
    }
}
