//! The `Origin` check of `/mcp`: a browser page may call it only from an origin named in
//! `[server] cors_origins`, or from this server itself reached by a loopback name, so that a
//! page on another site (or a DNS-rebound name) cannot drive agents through a local server.
//! Clients that are not browsers send no `Origin`.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::Value;

use super::rpc;

pub async fn check(allowed: Arc<[String]>, request: Request, next: Next) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let listed = allowed.iter().any(|a| a == "*" || origin == a.as_str());
        if !listed && !own_loopback_origin(origin, &request) {
            let body = rpc::error(&Value::Null, rpc::INVALID_REQUEST, "origin not allowed");
            return rpc::json_response(StatusCode::FORBIDDEN, &body);
        }
    }
    next.run(request).await
}

/// A page this server served to a loopback address calling it back (its `Origin` is the
/// request's own host, and that host is `localhost`, `127.0.0.1` or `[::1]`). A rebound name
/// is not a loopback name, so a rebinding page, whose origin is also "its own host", is not
/// let through; nor is a page of another local port.
fn own_loopback_origin(origin: &HeaderValue, request: &Request) -> bool {
    let host = match request.headers().get(header::HOST) {
        Some(host) => host.to_str().ok(),
        None => request.uri().authority().map(|a| a.as_str()),
    };
    let (Ok(origin), Some(host)) = (origin.to_str(), host) else {
        return false;
    };
    let Some(origin_host) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    if !origin_host.eq_ignore_ascii_case(host) {
        return false;
    }
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host.split(':').next().unwrap_or_default(),
    };
    name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1" || name == "::1"
}
