//! The access log (docs/deployment.md, "Logs"): one line per request when its response starts,
//! with the method, the route template (`/api/runs/{id}`: no ids of other tenants' runs, no
//! query string), the status and the latency to the response head. Bodies, headers (keys) and
//! query strings are never logged; an SSE stream is logged when it opens.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

/// What the line names a request that matched no route (the UI's files, unknown paths).
const UNROUTED: &str = "(static or unknown)";

pub async fn log(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string())
        .unwrap_or_else(|| UNROUTED.to_string());
    // Every line a handler logs carries the request's method and route.
    let span = tracing::info_span!("request", method = %method, route = %route);
    let response = next.run(request).instrument(span).await;
    tracing::info!(
        method = %method,
        route = %route,
        status = response.status().as_u16(),
        duration_ms = started.elapsed().as_millis() as u64,
        "request"
    );
    response
}
