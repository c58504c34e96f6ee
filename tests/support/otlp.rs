//! `Collector`: an in-process OTLP/HTTP receiver (protobuf, `POST /v1/traces`) that decodes
//! what reagent exports with the protocol's own generated messages and keeps every span, for
//! assertions on names, kinds, parent links and attributes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use prost::Message;

use super::target::Target;

/// An attribute's value as the tests compare it.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    List(Vec<Attr>),
}

/// One received span.
#[derive(Clone, Debug)]
pub struct Span {
    pub name: String,
    /// OTLP's `SpanKind`: 1 internal, 2 server, 3 client.
    pub kind: i32,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub attributes: HashMap<String, Attr>,
    /// OTLP's status code: 0 unset, 1 ok, 2 error.
    pub status: i32,
    /// The resource's `service.name`.
    pub service: String,
}

impl Span {
    pub fn str(&self, key: &str) -> Option<&str> {
        match self.attributes.get(key) {
            Some(Attr::Str(s)) => Some(s),
            _ => None,
        }
    }
    pub fn int(&self, key: &str) -> Option<i64> {
        match self.attributes.get(key) {
            Some(Attr::Int(n)) => Some(*n),
            _ => None,
        }
    }
}

fn value(v: Option<Any>) -> Attr {
    match v {
        Some(Any::StringValue(s)) => Attr::Str(s),
        Some(Any::IntValue(n)) => Attr::Int(n),
        Some(Any::DoubleValue(f)) => Attr::Float(f),
        Some(Any::BoolValue(b)) => Attr::Bool(b),
        Some(Any::ArrayValue(a)) => {
            Attr::List(a.values.into_iter().map(|v| value(v.value)).collect())
        }
        _ => Attr::Str(String::new()),
    }
}

fn attributes(kvs: Vec<KeyValue>) -> HashMap<String, Attr> {
    kvs.into_iter()
        .map(|kv| (kv.key, value(kv.value.and_then(|v| v.value))))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode(body: &[u8]) -> Vec<Span> {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf request");
    let mut out = Vec::new();
    for rs in request.resource_spans {
        let resource = attributes(rs.resource.map(|r| r.attributes).unwrap_or_default());
        let service = match resource.get("service.name") {
            Some(Attr::Str(s)) => s.clone(),
            _ => String::new(),
        };
        for ss in rs.scope_spans {
            for s in ss.spans {
                out.push(Span {
                    name: s.name,
                    kind: s.kind,
                    trace_id: hex(&s.trace_id),
                    span_id: hex(&s.span_id),
                    parent_span_id: hex(&s.parent_span_id),
                    attributes: attributes(s.attributes),
                    status: s.status.map(|st| st.code).unwrap_or(0),
                    service: service.clone(),
                });
            }
        }
    }
    out
}

/// The receiver; `endpoint()` is what `OTEL_EXPORTER_OTLP_ENDPOINT` is set to.
pub struct Collector {
    target: Target,
    spans: Arc<Mutex<Vec<Span>>>,
}

impl Collector {
    pub async fn start() -> Collector {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = spans.clone();
        let routes = Router::new().route(
            "/v1/traces",
            post(move |body: Bytes| {
                let kept = kept.clone();
                async move {
                    kept.lock().unwrap().extend(decode(&body));
                    (
                        StatusCode::OK,
                        [("content-type", "application/x-protobuf")],
                        Vec::new(),
                    )
                }
            }),
        );
        let target = Target::serve("127.0.0.1", routes).await;
        Collector { target, spans }
    }

    /// The base URL (the exporter appends `/v1/traces`).
    pub fn endpoint(&self) -> String {
        self.target.url("").trim_end_matches('/').to_string()
    }

    pub fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }

    /// Waits until `check` holds for the spans received so far; returns them.
    pub async fn wait_for(&self, what: &str, check: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        super::eventually(what, || async {
            let spans = self.spans();
            check(&spans).then_some(spans)
        })
        .await
    }
}

/// The first span named `name` (panics with the names received when there is none).
pub fn named<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| {
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        panic!("no span {name:?} among {names:?}")
    })
}
