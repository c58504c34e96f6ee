//! The browser UI's files (docs/api.md): compiled into the binary, so a binary copied anywhere
//! serves them, or read from a folder (`REAGENT_STATIC_DIR` / `[server] static_dir`) for UI
//! development. Embedded files carry their content type, a strong `ETag` (SHA-256 of the bytes)
//! and `Cache-Control: no-cache`: browsers revalidate each load and get a 304 until the binary
//! changes, so an upgrade never shows a stale UI.

use std::path::Path;

use axum::body::Body;
use axum::handler::HandlerWithoutStateExt;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use tower_http::services::ServeDir;

use super::error;

/// `static/` as it was at compile time.
#[derive(rust_embed::Embed)]
#[folder = "static/"]
struct Ui;

/// Where the UI comes from, for the start-up log and `check-config`.
pub fn describe(dir: Option<&Path>) -> String {
    match dir {
        None => format!("compiled into the binary ({} files)", Ui::iter().count()),
        Some(dir) => {
            let shown = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
            let note = if dir.join("index.html").is_file() {
                ""
            } else {
                " (no index.html there: / will be a 404)"
            };
            format!("folder {}{note}", shown.display())
        }
    }
}

/// The fallback service of the router: the folder when one is configured, else the embedded UI.
/// Unknown paths and methods other than GET/HEAD get the API's JSON 404, as before.
pub fn service<S: Clone + Send + Sync + 'static>(dir: Option<&Path>) -> MethodRouter<S> {
    match dir {
        Some(dir) => {
            let folder = ServeDir::new(dir)
                .call_fallback_on_method_not_allowed(true)
                .not_found_service(error::not_found.into_service());
            axum::routing::any_service(folder)
        }
        None => axum::routing::any(embedded),
    }
}

async fn embedded(method: Method, uri: Uri, headers: HeaderMap) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return error::ApiError::NotFound.into_response();
    }
    let path = uri.path().trim_start_matches('/');
    let path = if path.is_empty() || path.ends_with('/') {
        format!("{path}index.html")
    } else {
        path.to_string()
    };
    let Some(file) = Ui::get(&path) else {
        return error::ApiError::NotFound.into_response();
    };
    let etag = format!("\"{}\"", hex(&file.metadata.sha256_hash()));
    let cached = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut response = if cached {
        StatusCode::NOT_MODIFIED.into_response()
    } else if method == Method::HEAD {
        Response::new(Body::empty())
    } else {
        Response::new(Body::from(file.data))
    };
    let h = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if !cached {
        let mime = file.metadata.mimetype();
        // Text is UTF-8 here; saying so spares browsers a guess.
        let mime = if mime.starts_with("text/") || mime == "image/svg+xml" {
            format!("{mime}; charset=utf-8")
        } else {
            mime.to_string()
        };
        if let Ok(v) = HeaderValue::from_str(&mime) {
            h.insert(header::CONTENT_TYPE, v);
        }
    }
    response
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
