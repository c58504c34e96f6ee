//! `eventually`: the one way tests wait for something asynchronous (a gauge going back to 0, a
//! run being persisted, a child's log line). The deadline is a safety net for a hang, never a
//! timing assertion: a condition that holds returns at the next poll.

use std::future::Future;
use std::time::Duration;

/// How long [`eventually`] waits before it fails the test.
pub const DEADLINE: Duration = Duration::from_secs(60);
/// How often it checks.
const POLL: Duration = Duration::from_millis(20);

/// What a check returns: `true`, `Some(value)` or `Ok(value)` when done; `false`, `None` or
/// `Err(why)` to keep waiting (the last `why` is in the failure message).
pub trait Done {
    type Value;
    fn done(self) -> Result<Self::Value, String>;
}

impl Done for bool {
    type Value = ();
    fn done(self) -> Result<(), String> {
        self.then_some(()).ok_or_default()
    }
}

impl<T> Done for Option<T> {
    type Value = T;
    fn done(self) -> Result<T, String> {
        self.ok_or_default()
    }
}

impl<T> Done for Result<T, String> {
    type Value = T;
    fn done(self) -> Result<T, String> {
        self
    }
}

trait OkOrDefault<T> {
    fn ok_or_default(self) -> Result<T, String>;
}

impl<T> OkOrDefault<T> for Option<T> {
    fn ok_or_default(self) -> Result<T, String> {
        self.ok_or_else(String::new)
    }
}

/// Runs `check` until it is done and returns its value; panics with `what` (and the last reason
/// the check gave) after [`DEADLINE`].
pub async fn eventually<F, Fut>(what: &str, mut check: F) -> <Fut::Output as Done>::Value
where
    F: FnMut() -> Fut,
    Fut: Future,
    Fut::Output: Done,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let why = match check().await.done() {
            Ok(value) => return value,
            Err(why) => why,
        };
        assert!(
            tokio::time::Instant::now() < deadline,
            "never happened within {DEADLINE:?}: {what} {why}"
        );
        tokio::time::sleep(POLL).await;
    }
}
