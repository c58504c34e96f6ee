//! [`Sink`]: a collector that is up, for `tracing`: an OTLP/HTTP receiver (`POST /v1/traces`,
//! protobuf) in the load generator's process that decodes each export with the protocol's own
//! generated messages, counts its spans and answers 200, as a real collector would.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

#[derive(Default)]
struct Counts {
    requests: AtomicU64,
    spans: AtomicU64,
}

pub struct Sink {
    port: u16,
    counts: Arc<Counts>,
    task: tokio::task::JoinHandle<()>,
}

impl Sink {
    pub async fn start() -> anyhow::Result<Sink> {
        let counts = Arc::new(Counts::default());
        let kept = counts.clone();
        let routes = Router::new().route(
            "/v1/traces",
            post(move |body: Bytes| {
                let kept = kept.clone();
                async move {
                    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
                        return (StatusCode::BAD_REQUEST, Vec::new());
                    };
                    let spans: usize = request
                        .resource_spans
                        .iter()
                        .flat_map(|r| &r.scope_spans)
                        .map(|s| s.spans.len())
                        .sum();
                    kept.requests.fetch_add(1, Ordering::Relaxed);
                    kept.spans.fetch_add(spans as u64, Ordering::Relaxed);
                    (StatusCode::OK, Vec::new())
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, routes).await;
        });
        Ok(Sink { port, counts, task })
    }

    /// What `OTEL_EXPORTER_OTLP_ENDPOINT` is set to (the exporter appends `/v1/traces`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Export requests and spans received so far.
    pub fn received(&self) -> (u64, u64) {
        (
            self.counts.requests.load(Ordering::Relaxed),
            self.counts.spans.load(Ordering::Relaxed),
        )
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.task.abort();
    }
}
