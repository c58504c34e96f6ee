use serde_json::{json, Value};

use super::card::card;
use super::message::{decision, Incoming};
use super::rpc::{self, method, Op, Request, RpcError, Wire};
use super::wire::{Ids, Shapes, State};
use crate::config::AgentSpec;
use crate::domain::RunStatus;

fn ids() -> Ids {
    Ids {
        task: "t1".into(),
        context: "c1".into(),
    }
}

#[test]
fn both_versions_method_names_reach_the_same_operations() {
    assert_eq!(method("SendMessage").unwrap(), (Op::Send, Wire::V1));
    assert_eq!(method("message/send").unwrap(), (Op::Send, Wire::V03));
    assert_eq!(
        method("SendStreamingMessage").unwrap(),
        (Op::Stream, Wire::V1)
    );
    assert_eq!(method("message/stream").unwrap(), (Op::Stream, Wire::V03));
    assert_eq!(method("GetTask").unwrap(), (Op::Get, Wire::V1));
    assert_eq!(method("tasks/get").unwrap(), (Op::Get, Wire::V03));
    assert_eq!(method("CancelTask").unwrap(), (Op::Cancel, Wire::V1));
    assert_eq!(method("tasks/cancel").unwrap(), (Op::Cancel, Wire::V03));
    assert_eq!(
        method("SubscribeToTask").unwrap(),
        (Op::Subscribe, Wire::V1)
    );
    assert_eq!(
        method("tasks/resubscribe").unwrap(),
        (Op::Subscribe, Wire::V03)
    );
    let code = |name: &str| method(name).unwrap_err().code;
    assert_eq!(
        code("CreateTaskPushNotificationConfig"),
        rpc::PUSH_NOT_SUPPORTED
    );
    assert_eq!(
        code("tasks/pushNotificationConfig/set"),
        rpc::PUSH_NOT_SUPPORTED
    );
    assert_eq!(code("GetExtendedAgentCard"), rpc::NO_EXTENDED_CARD);
    assert_eq!(code("ListTasks"), rpc::UNSUPPORTED);
    assert_eq!(code("tasks/send"), rpc::METHOD_NOT_FOUND);
}

#[test]
fn a_body_that_is_not_a_request_gets_the_envelope_error() {
    let err = |body: &str| Request::parse(body.as_bytes()).unwrap_err();
    assert_eq!(err("{").1.code, rpc::PARSE_ERROR);
    assert_eq!(err("[]").1.code, rpc::INVALID_REQUEST);
    assert_eq!(
        err(r#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#).1.code,
        rpc::INVALID_REQUEST
    );
    // No id: a notification, which A2A does not define; its error names no id.
    let (id, e) = err(r#"{"jsonrpc":"2.0","method":"GetTask"}"#);
    assert_eq!((id, e.code), (Value::Null, rpc::INVALID_REQUEST));
    let (id, e) = err(r#"{"jsonrpc":"2.0","id":"a","method":5}"#);
    assert_eq!((id, e.code), (json!("a"), rpc::INVALID_REQUEST));
    let (id, e) = err(r#"{"jsonrpc":"2.0","id":7,"method":"GetTask","params":[1]}"#);
    assert_eq!((id, e.code), (json!(7), rpc::INVALID_PARAMS));
    let ok = Request::parse(br#"{"jsonrpc":"2.0","id":7,"method":"GetTask"}"#).unwrap();
    assert_eq!((ok.id, ok.method.as_str()), (json!(7), "GetTask"));
}

#[test]
fn a2a_errors_carry_their_error_info_on_1_0_only() {
    let e = RpcError::task_not_found();
    let v1 = e.object(Wire::V1);
    assert_eq!(v1["code"], -32001);
    assert_eq!(v1["data"][0]["reason"], "TASK_NOT_FOUND");
    assert_eq!(
        v1["data"][0]["@type"],
        "type.googleapis.com/google.rpc.ErrorInfo"
    );
    assert!(e.object(Wire::V03).get("data").is_none());
    assert!(RpcError::invalid("x")
        .object(Wire::V1)
        .get("data")
        .is_none());
}

#[test]
fn each_wire_writes_its_own_states_roles_parts_and_updates() {
    let (v1, v03) = (Shapes(Wire::V1), Shapes(Wire::V03));
    assert_eq!(v1.state(State::InputRequired), "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(v03.state(State::InputRequired), "input-required");
    assert_eq!(v1.state(State::Canceled), "TASK_STATE_CANCELED");
    assert_eq!(v03.state(State::Canceled), "canceled");
    assert_eq!(v1.text_part("a"), json!({"text": "a"}));
    assert_eq!(v03.text_part("a"), json!({"kind": "text", "text": "a"}));
    let m = v1.message("m", false, vec![], &ids());
    assert_eq!(
        (m["role"].as_str(), m.get("kind")),
        (Some("ROLE_AGENT"), None)
    );
    let m = v03.message("m", true, vec![], &ids());
    assert_eq!(
        (m["role"].as_str(), m["kind"].as_str()),
        (Some("user"), Some("message"))
    );
    let status = v1.status(State::Working, None);
    let up = v1.status_update(&ids(), status.clone(), false);
    assert_eq!(up["statusUpdate"]["taskId"], "t1");
    assert!(up["statusUpdate"].get("final").is_none());
    let up = v03.status_update(&ids(), status, true);
    assert_eq!(
        (up["kind"].as_str(), up["final"].as_bool()),
        (Some("status-update"), Some(true))
    );
    let up = v1.artifact_update(&ids(), "x", true, false);
    assert_eq!(up["artifactUpdate"]["artifact"]["parts"][0]["text"], "x");
    assert_eq!(up["artifactUpdate"]["append"], true);
    let up = v03.artifact_update(&ids(), "x", false, true);
    assert_eq!(
        (up["kind"].as_str(), up["lastChunk"].as_bool()),
        (Some("artifact-update"), Some(true))
    );
    let task = v03.task(&ids(), json!({}), vec![], vec![]);
    assert_eq!(task["kind"], "task");
    assert_eq!(v1.task_result(task.clone())["task"], task);
    assert_eq!(v03.task_result(task.clone()), task);
}

#[test]
fn run_statuses_are_task_states() {
    assert_eq!(State::of(RunStatus::Completed), State::Completed);
    assert_eq!(State::of(RunStatus::MaxIterations), State::Completed);
    assert_eq!(State::of(RunStatus::Cancelled), State::Canceled);
    assert_eq!(State::of(RunStatus::Failed), State::Failed);
    assert_eq!(State::of(RunStatus::RequiresAction), State::InputRequired);
    assert_eq!(State::of(RunStatus::Running), State::Working);
    assert!(State::InputRequired.ends_stream() && !State::InputRequired.is_terminal());
}

fn send(message: Value) -> Result<Incoming, RpcError> {
    Incoming::parse(&json!({"message": message}))
}

#[test]
fn messages_of_either_wire_read_as_text_images_and_data() {
    let m = send(json!({"role": "ROLE_USER", "messageId": "m1",
                        "parts": [{"text": "hello"}, {"text": "there"},
                                  {"url": "https://e.x/a.png", "mediaType": "image/png"},
                                  {"data": {"approved": true}}]}))
    .unwrap();
    assert_eq!(m.text, "hello\n\nthere");
    assert_eq!(m.images, ["https://e.x/a.png"]);
    assert_eq!(m.data, [json!({"approved": true})]);
    let m = send(json!({"role": "user", "messageId": "m1", "kind": "message", "contextId": "c",
                        "parts": [{"kind": "text", "text": "hi"},
                                  {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "image/png"}}]}))
    .unwrap();
    assert_eq!(
        (m.text.as_str(), m.context_id.as_deref()),
        ("hi", Some("c"))
    );
    assert_eq!(m.images, ["data:image/png;base64,aGk="]);
    assert!(!m.return_immediately);
    let m = Incoming::parse(&json!({"message": {"role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "x"}]},
                                    "configuration": {"blocking": false}}))
    .unwrap();
    assert!(m.return_immediately);
}

#[test]
fn bad_messages_are_invalid_params_or_an_unsupported_content_type() {
    let code = |m: Value| send(m).unwrap_err().code;
    let text = json!([{"text": "x"}]);
    assert_eq!(
        code(json!({"role": "ROLE_AGENT", "messageId": "m", "parts": text})),
        rpc::INVALID_PARAMS
    );
    assert_eq!(
        code(json!({"role": "ROLE_USER", "parts": text})),
        rpc::INVALID_PARAMS
    );
    assert_eq!(
        code(json!({"role": "ROLE_USER", "messageId": "m", "parts": []})),
        rpc::INVALID_PARAMS
    );
    assert_eq!(
        code(json!({"role": "ROLE_USER", "messageId": "m", "parts": [{"text": " "}]})),
        rpc::INVALID_PARAMS
    );
    assert_eq!(
        code(json!({"role": "ROLE_USER", "messageId": "m", "parts": [{"foo": 1}]})),
        rpc::INVALID_PARAMS
    );
    let pdf = json!([{"url": "https://e.x/a.pdf", "mediaType": "application/pdf"}]);
    assert_eq!(
        code(json!({"role": "ROLE_USER", "messageId": "m", "parts": pdf})),
        rpc::CONTENT_TYPE
    );
    let only_pdf = json!({"message": {"role": "ROLE_USER", "messageId": "m", "parts": text},
                          "configuration": {"acceptedOutputModes": ["application/pdf"]}});
    assert_eq!(
        Incoming::parse(&only_pdf).unwrap_err().code,
        rpc::CONTENT_TYPE
    );
    assert_eq!(
        Incoming::parse(&json!({})).unwrap_err().code,
        rpc::INVALID_PARAMS
    );
}

#[test]
fn an_approval_is_answered_in_words_or_data() {
    let said = |text: &str| {
        let m = send(json!({"role": "user", "messageId": "m", "parts": [{"text": text}]})).unwrap();
        decision(&m).map(|(approve, _)| approve)
    };
    assert_eq!(said("yes"), Some(true));
    assert_eq!(said("Approve, go ahead"), Some(true));
    assert_eq!(said("no: not on a Friday"), Some(false));
    assert_eq!(said("maybe"), None);
    let m = send(json!({"role": "user", "messageId": "m",
                        "parts": [{"data": {"approved": false, "reason": "later"}}]}))
    .unwrap();
    assert_eq!(decision(&m), Some((false, Some("later".into()))));
}

#[test]
fn the_card_names_both_interfaces_and_the_bearer_scheme_only_with_keys() {
    let spec = AgentSpec::implicit();
    let c = card(&spec, "http://h/a2a/reagent", false);
    assert_eq!(c["name"], spec.name);
    assert_eq!(c["capabilities"]["streaming"], true);
    let versions: Vec<&str> = c["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["protocolVersion"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["1.0", "0.3"]);
    assert_eq!(c["url"], "http://h/a2a/reagent");
    assert_eq!(c["skills"].as_array().unwrap().len(), 1);
    assert!(c.get("securitySchemes").is_none() && c.get("security").is_none());
    let c = card(&spec, "http://h/a2a/reagent", true);
    assert_eq!(
        c["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert_eq!(c["securitySchemes"]["bearer"]["type"], "http");
    assert_eq!(c["security"], json!([{"bearer": []}]));
}

#[test]
fn an_answer_chunk_written_by_hand_is_the_artifact_update_of_its_wire() {
    use super::stream::TaskStream;
    use crate::runs::LoggedEvent;
    use crate::server::event_body::Encoder;

    for wire in [Wire::V1, Wire::V03] {
        let mut encoder = TaskStream::new(wire, json!("rpc-1"), ids());
        let mut out = String::new();
        for (id, text) in [(3, "a \\\"quoted\\\" word"), (4, " next")] {
            let data = format!("{{\"status\":\"delta\",\"content\":\"{text}\"}}");
            assert!(!encoder.event(&LoggedEvent::stored(id, "answer", data), &mut out));
        }
        let frames: Vec<&str> = out.split("\n\n").filter(|f| !f.is_empty()).collect();
        assert_eq!(frames.len(), 2, "{out}");
        let read = |frame: &str| -> (u64, Value) {
            let (id, data) = frame.split_once("\ndata: ").unwrap();
            let id = id.strip_prefix("id: ").unwrap().parse().unwrap();
            (id, serde_json::from_str(data).unwrap())
        };
        let shapes = Shapes(wire);
        let (id, first) = read(frames[0]);
        let expected = shapes.artifact_update(&ids(), "a \"quoted\" word", false, false);
        assert_eq!((id, first), (3, rpc::result(&json!("rpc-1"), expected)));
        let (id, second) = read(frames[1]);
        let expected = shapes.artifact_update(&ids(), " next", true, false);
        assert_eq!((id, second), (4, rpc::result(&json!("rpc-1"), expected)));
    }
}
