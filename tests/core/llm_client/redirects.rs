//! The provider is an operator-declared endpoint: a redirect to another origin is refused, so
//! its key and the conversation never reach that origin.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::any;
use axum::Router;

use super::*;

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}")
}

fn client_at(base_url: String) -> ModelClient {
    ModelClient::new(ClientConfig {
        protocol: Protocol::OpenAi,
        base_url,
        api_key: Some("sk-redirect-test".into()),
        model: "fake-model".into(),
        abilities: Abilities::default(),
        context_window: 128_000,
        max_output_tokens: 4_096,
        timeout: Duration::from_secs(5),
        max_retries: 0,
    })
    .expect("client builds")
}

#[tokio::test]
async fn a_provider_redirect_to_another_origin_is_refused() {
    let reached = Arc::new(AtomicUsize::new(0));
    let seen = reached.clone();
    let other = serve(Router::new().fallback(any(move || {
        seen.fetch_add(1, Ordering::SeqCst);
        async { "reached the other origin" }
    })))
    .await;
    let to = format!("{other}/v1/chat/completions");
    let moved = serve(Router::new().fallback(any(move || {
        let to = to.clone();
        async move { (StatusCode::TEMPORARY_REDIRECT, [("location", to)]).into_response() }
    })))
    .await;
    let err = client_at(format!("{moved}/v1"))
        .chat(ask())
        .await
        .expect_err("a cross-origin redirect fails the call");
    assert!(err.to_string().contains("another origin"), "{err}");
    assert_eq!(
        reached.load(Ordering::SeqCst),
        0,
        "the other origin was reached"
    );
}
