//! The error rate: 1 fails every attempt with 503, a seeded 0.5 repeats the same sequence.

use super::*;

#[tokio::test]
async fn error_rate_one_fails_every_attempt_with_503() {
    let mock = start(MockConfig {
        error_rate: 1.0,
        ..MockConfig::default()
    })
    .await;
    let llm = client(&mock, Abilities::default(), 2);
    let err = llm
        .chat(ChatRequest::new(vec![Message::user("hi")]))
        .await
        .expect_err("every attempt fails");
    assert!(
        matches!(err, LlmError::Status { status: 503, .. }),
        "{err:?}"
    );
    // One attempt + two retries, all refused.
    assert_eq!(mock.request_count(), 3);
    assert_eq!(mock.error_count(), 3);
}

/// The statuses of `n` sequential raw requests (no client retries in the way).
async fn statuses(mock: &MockProvider, n: usize) -> Vec<u16> {
    let http = reqwest::Client::new();
    let url = format!("{}/chat/completions", mock.base_url());
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let r = http
            .post(&url)
            .body(r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#)
            .send()
            .await
            .expect("request");
        if r.status() == 503 {
            assert_eq!(r.headers()["retry-after"], "0");
        }
        out.push(r.status().as_u16());
    }
    out
}

#[tokio::test]
async fn error_rate_half_with_a_seed_repeats_the_same_sequence() {
    let cfg = MockConfig {
        error_rate: 0.5,
        seed: 42,
        ..MockConfig::default()
    };
    let first = statuses(&start(cfg.clone()).await, 40).await;
    let second = statuses(&start(cfg.clone()).await, 40).await;
    assert_eq!(first, second);
    let errors = first.iter().filter(|s| **s == 503).count();
    assert!((5..=35).contains(&errors), "about half fail: {first:?}");
    assert!(first.iter().all(|s| *s == 503 || *s == 200));
    let other = statuses(&start(MockConfig { seed: 7, ..cfg }).await, 40).await;
    assert_ne!(first, other, "the seed matters");
}
