//! The OTLP exporter as the batch processor drives it, reporting failures at most once a
//! minute: a collector that is down costs the spans it misses and one log line per minute,
//! never a run's time (the processor drops what overflows its queue).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use opentelemetry_sdk::Resource;

/// How often a failing export is logged.
pub(super) const REPORT_EVERY: Duration = Duration::from_secs(60);

/// Rate-limits warnings: the first failure is reported, then one per [`REPORT_EVERY`] with
/// the count of failures in between.
#[derive(Debug, Default)]
pub(super) struct Limiter {
    state: Mutex<(Option<Instant>, u64)>,
}

impl Limiter {
    /// `Some(failures since the last report)` when this failure is to be reported.
    pub(super) fn failed(&self, now: Instant) -> Option<u64> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.1 += 1;
        let due = state
            .0
            .is_none_or(|last| now.duration_since(last) >= REPORT_EVERY);
        if !due {
            return None;
        }
        let failures = state.1;
        *state = (Some(now), 0);
        Some(failures)
    }
}

#[derive(Debug)]
pub(super) struct Reporting<E> {
    inner: E,
    limiter: Limiter,
}

impl<E> Reporting<E> {
    pub(super) fn new(inner: E) -> Self {
        Self {
            inner,
            limiter: Limiter::default(),
        }
    }
}

impl<E: SpanExporter> SpanExporter for Reporting<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        let result = self.inner.export(batch).await;
        if let Err(e) = &result {
            if let Some(failures) = self.limiter.failed(Instant::now()) {
                tracing::warn!(
                    error = %e,
                    spans,
                    failed_exports = failures,
                    "could not export traces to the OTLP endpoint (reported at most once a minute)"
                );
            }
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
