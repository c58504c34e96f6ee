//! `[server] cors_origins` (docs/protocols.md, "Browser pages on another origin"): the front-end
//! routes answer a listed origin's preflight and mark their answers for it, still asking for a
//! key; other origins, other routes and a server without the setting send no CORS header.

use reqwest::header::{HeaderMap, ORIGIN};
use reqwest::Method;

use super::ALICE;
use crate::support::app::{Options, TestApp};

const PAGE: &str = "http://page.example:8000";

async fn app(origins: &str) -> TestApp {
    TestApp::with(Options {
        env: vec![
            ("REAGENT_API_KEYS", format!("alice:{ALICE}")),
            ("REAGENT_CORS_ORIGINS", origins.to_string()),
        ],
        toml: "[[agents]]\nname = \"helper\"\ntools = [\"echo\"]\n".into(),
        ..Options::default()
    })
    .await
}

/// A browser's preflight for a `POST` with a key and a JSON body, from `origin`.
async fn preflight(app: &TestApp, path: &str, origin: &str) -> HeaderMap {
    let r = reqwest::Client::new()
        .request(Method::OPTIONS, app.url(path))
        .header(ORIGIN, origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-type",
        )
        .send()
        .await
        .unwrap();
    r.headers().clone()
}

fn allowed(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("access-control-allow-origin")
        .and_then(|v| v.to_str().ok())
}

#[tokio::test]
async fn a_listed_origin_may_call_the_front_end_routes_and_nothing_else() {
    let app = app(&format!("{PAGE}, http://other.example")).await;
    for path in [
        "/ag-ui/helper",
        "/ai-sdk/helper",
        "/ai-sdk/helper/c1/stream",
    ] {
        let headers = preflight(&app, path, PAGE).await;
        assert_eq!(allowed(&headers), Some(PAGE), "{path}: {headers:?}");
        let asked = headers["access-control-allow-headers"].to_str().unwrap();
        assert!(asked.contains("authorization"), "{asked}");
    }
    assert_eq!(
        allowed(&preflight(&app, "/ag-ui/helper", "http://evil.example").await),
        None
    );
    assert_eq!(
        allowed(&preflight(&app, "/api/conversations", PAGE).await),
        None
    );

    // The key is still required; the refusal is readable by the page.
    let r = reqwest::Client::new()
        .post(app.url("/ag-ui/helper"))
        .header(ORIGIN, PAGE)
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(allowed(r.headers()), Some(PAGE));
    let r = reqwest::Client::new()
        .get(app.url("/ai-sdk/helper/c1/stream"))
        .header(ORIGIN, PAGE)
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(allowed(r.headers()), Some(PAGE));
}

#[tokio::test]
async fn without_the_setting_no_origin_is_allowed() {
    let app = app("").await;
    assert_eq!(allowed(&preflight(&app, "/ag-ui/helper", PAGE).await), None);
}
