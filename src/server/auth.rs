//! Authentication, tenancy and the per-key rate limit (docs/api.md).
//!
//! With no keys configured auth is off and every caller is the tenant `""`. Otherwise every
//! `/api` request needs `Authorization: Bearer <key>`; the key's *name* becomes the [`Owner`]
//! that handlers pass to the store and the run manager, which is what makes another tenant's
//! resources answer 404. Keys are compared in constant time against *every* configured key (no
//! early exit), so timing reveals neither a prefix nor which key matched. Keys are never logged.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use dashmap::DashMap;

use super::error::ApiError;

/// The tenant a request acts for (the API-key name; `""` when auth is off).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner(pub String);

/// The configured keys and the rate limiter.
pub struct Auth {
    keys: Vec<(String, Vec<u8>)>,
    metrics_key: Option<Vec<u8>>,
    limiter: Option<RateLimiter>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("keys", &self.keys.len())
            .field("metrics_key", &self.metrics_key.is_some())
            .finish()
    }
}

impl Auth {
    /// `keys` are `(name, key)` pairs (none: auth is off); `metrics_key` guards `/metrics`.
    pub fn new<'a>(
        keys: impl IntoIterator<Item = (&'a str, &'a str)>,
        metrics_key: Option<&str>,
        rate_limit_per_minute: Option<u32>,
    ) -> Self {
        Self {
            keys: keys
                .into_iter()
                .map(|(name, key)| (name.to_string(), key.as_bytes().to_vec()))
                .collect(),
            metrics_key: metrics_key.map(|k| k.as_bytes().to_vec()),
            limiter: rate_limit_per_minute
                .filter(|n| *n > 0)
                .map(RateLimiter::new),
        }
    }

    pub fn enabled(&self) -> bool {
        !self.keys.is_empty()
    }

    /// The owner for these request headers, or 401.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Owner, ApiError> {
        if !self.enabled() {
            return Ok(Owner(String::new()));
        }
        let presented = bearer(headers).ok_or(ApiError::Unauthorized)?;
        let mut found: Option<&str> = None;
        for (name, key) in &self.keys {
            // Every key is compared, whatever matched before.
            if constant_time_eq(presented.as_bytes(), key) && found.is_none() {
                found = Some(name);
            }
        }
        found
            .map(|n| Owner(n.to_string()))
            .ok_or(ApiError::Unauthorized)
    }

    pub fn has_metrics_key(&self) -> bool {
        self.metrics_key.is_some()
    }

    /// `/metrics` is public unless it has its own key.
    pub fn check_metrics(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        match &self.metrics_key {
            None => Ok(()),
            Some(key) => match bearer(headers) {
                Some(p) if constant_time_eq(p.as_bytes(), key) => Ok(()),
                _ => Err(ApiError::Unauthorized),
            },
        }
    }

    /// Takes one request token of `owner`; 429 when the bucket is empty.
    pub fn admit(&self, owner: &Owner) -> Result<(), ApiError> {
        match &self.limiter {
            None => Ok(()),
            Some(l) => l.take(&owner.0, Instant::now()),
        }
    }
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

pub use crate::domain::constant_time_eq;

/// A token bucket per tenant: `per_minute` burst, refilled continuously.
pub struct RateLimiter {
    per_minute: f64,
    buckets: DashMap<String, (f64, Instant)>,
}

impl RateLimiter {
    pub fn new(per_minute: u32) -> Self {
        Self {
            per_minute: f64::from(per_minute),
            buckets: DashMap::new(),
        }
    }

    pub fn take(&self, key: &str, now: Instant) -> Result<(), ApiError> {
        let per_second = self.per_minute / 60.0;
        let mut entry = self
            .buckets
            .entry(key.to_string())
            .or_insert((self.per_minute, now));
        let (tokens, last) = *entry;
        let refilled = (tokens + now.saturating_duration_since(last).as_secs_f64() * per_second)
            .min(self.per_minute);
        if refilled >= 1.0 {
            *entry = (refilled - 1.0, now);
            Ok(())
        } else {
            *entry = (refilled, now);
            let wait = ((1.0 - refilled) / per_second).ceil().max(1.0);
            Err(ApiError::RateLimited {
                retry_after_s: wait as u64,
            })
        }
    }
}

/// Middleware on `/api`: authenticate, rate-limit, and hand the [`Owner`] to handlers.
pub async fn require_key(
    State(auth): State<Arc<Auth>>,
    mut request: Request,
    next: Next,
) -> Response {
    let owner = match auth.authenticate(request.headers()) {
        Ok(owner) => owner,
        Err(e) => return e.into_response(),
    };
    if let Err(e) = auth.admit(&owner) {
        return e.into_response();
    }
    request.extensions_mut().insert(owner);
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::http::HeaderValue;

    use super::*;

    const KEYS: [(&str, &str); 2] = [("alice", "ka"), ("bob", "kb")];

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn keys_map_to_their_names_and_others_are_refused() {
        let auth = Auth::new(KEYS, None, None);
        assert_eq!(
            auth.authenticate(&headers("Bearer kb")).unwrap(),
            Owner("bob".into())
        );
        assert_eq!(
            auth.authenticate(&headers("bearer ka")).unwrap(),
            Owner("alice".into())
        );
        for bad in ["Bearer k", "Bearer kaa", "Basic ka", "ka"] {
            assert!(auth.authenticate(&headers(bad)).is_err(), "{bad}");
        }
        assert!(auth.authenticate(&HeaderMap::new()).is_err());
    }

    #[test]
    fn auth_off_without_keys() {
        let auth = Auth::new([], None, None);
        assert_eq!(
            auth.authenticate(&HeaderMap::new()).unwrap(),
            Owner(String::new())
        );
    }

    #[test]
    fn bucket_empties_then_refills() {
        let limiter = RateLimiter::new(2);
        let t0 = Instant::now();
        assert!(limiter.take("a", t0).is_ok());
        assert!(limiter.take("a", t0).is_ok());
        match limiter.take("a", t0) {
            Err(ApiError::RateLimited { retry_after_s }) => assert!(retry_after_s >= 1),
            other => panic!("{other:?}"),
        }
        // Another tenant has its own bucket.
        assert!(limiter.take("b", t0).is_ok());
        assert!(limiter.take("a", t0 + Duration::from_secs(31)).is_ok());
    }

    #[test]
    fn constant_time_eq_matches_plain_equality() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
