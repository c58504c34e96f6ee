use std::collections::HashMap;
use std::time::{Duration, Instant};

use opentelemetry::trace::TraceContextExt;

use super::export::{Limiter, REPORT_EVERY};
use super::propagation::{from_traceparent, traceparent};
use super::spans::provider_name;

#[test]
fn a_failing_export_is_reported_once_a_minute_with_the_count() {
    let limiter = Limiter::default();
    let t0 = Instant::now();
    assert_eq!(limiter.failed(t0), Some(1));
    for s in 1..60 {
        assert_eq!(limiter.failed(t0 + Duration::from_secs(s)), None);
    }
    assert_eq!(limiter.failed(t0 + REPORT_EVERY), Some(60));
    assert_eq!(
        limiter.failed(t0 + REPORT_EVERY + Duration::from_secs(1)),
        None
    );
}

#[test]
fn a_stored_traceparent_round_trips() {
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let cx = from_traceparent(tp);
    assert!(cx.span().span_context().is_remote());
    assert_eq!(traceparent(&cx).as_deref(), Some(tp));
    assert_eq!(traceparent(&from_traceparent("garbage")), None);
}

#[test]
fn providers_are_named_by_their_host() {
    assert_eq!(provider_name("api.openai.com"), "openai");
    assert_eq!(provider_name("api.anthropic.com"), "anthropic");
    assert_eq!(provider_name("myres.openai.azure.com"), "azure.ai.openai");
    assert_eq!(provider_name("127.0.0.1"), "127.0.0.1");
}

#[test]
fn tracing_is_on_only_with_an_endpoint() {
    let mut env = HashMap::new();
    assert!(!super::configured(&env));
    env.insert("OTEL_EXPORTER_OTLP_ENDPOINT".to_string(), " ".to_string());
    assert!(!super::configured(&env));
    env.insert(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT".to_string(),
        "http://127.0.0.1:4318/v1/traces".to_string(),
    );
    assert!(super::configured(&env));
}
