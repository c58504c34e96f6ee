//! The `Origin` check of `/mcp`: a browser page may call it only from an origin named in
//! `[server] cors_origins`, so that a page on another site (or a DNS-rebound name) cannot
//! drive agents through a local server. Clients that are not browsers send no `Origin`.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::Value;

use super::rpc;

pub async fn check(allowed: Arc<[String]>, request: Request, next: Next) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let ok = allowed.iter().any(|a| a == "*" || origin == a.as_str());
        if !ok {
            let body = rpc::error(&Value::Null, rpc::INVALID_REQUEST, "origin not allowed");
            return rpc::json_response(StatusCode::FORBIDDEN, &body);
        }
    }
    next.run(request).await
}
