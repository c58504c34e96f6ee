//! OpenAPI links: which response's ids the next operations take (a conversation's runs, a
//! run's events, an interrupt's recall), so that clients and schemathesis's stateful tests can
//! follow a conversation through its life instead of guessing ids.

use serde_json::{json, Map, Value};

/// (operation, status, link name, target operation, [(parameter, runtime expression)]).
type Link = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

const CONVERSATION: &[(&str, &str)] = &[("id", "$response.body#/id")];
const RUN: &[(&str, &str)] = &[("run_id", "$response.body#/run_id")];

pub(super) const LINKS: &[Link] = &[
    ("create", "201", "show", "show_conversation", CONVERSATION),
    ("create", "201", "rename", "rename", CONVERSATION),
    ("create", "201", "start", "start", CONVERSATION),
    ("create", "201", "interrupt", "interrupt", CONVERSATION),
    ("create", "201", "delete", "remove", CONVERSATION),
    ("start", "202", "run", "show_run", RUN),
    ("start", "202", "events", "events", RUN),
    ("start", "202", "cancel", "cancel", RUN),
    (
        "start",
        "202",
        "conversation",
        "show_conversation",
        &[("id", "$response.body#/conversation_id")],
    ),
    (
        "start",
        "202",
        "interrupt",
        "interrupt",
        &[("id", "$response.body#/conversation_id")],
    ),
    (
        "interrupt",
        "202",
        "recall",
        "recall",
        &[
            ("id", "$request.path.id"),
            ("interrupt_id", "$response.body#/id"),
        ],
    ),
    ("interrupt", "202", "run", "show_run", RUN),
    ("cancel", "202", "run", "show_run", RUN),
];

/// Adds [`LINKS`] to the responses they start from (a missing operation is skipped).
pub fn add(doc: &mut Value) {
    super::each_operation(doc, |_, op| {
        let Some(id) = op
            .get("operationId")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            return;
        };
        for (from, status, name, to, params) in LINKS {
            if *from != id {
                continue;
            }
            let Some(response) = op.get_mut("responses").and_then(|r| r.get_mut(*status)) else {
                continue;
            };
            let parameters: Map<String, Value> = params
                .iter()
                .map(|(p, expr)| (p.to_string(), json!(expr)))
                .collect();
            let links = response
                .as_object_mut()
                .map(|r| r.entry("links").or_insert_with(|| json!({})));
            if let Some(links) = links {
                links[*name] = json!({"operationId": to, "parameters": parameters});
            }
        }
    });
}
