//! The instances a client of several instances talks to, which were killed when, and the
//! request that goes to any of them that answers (`--urls`, chaos).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::Rng;

/// The instances a client may talk to, and which were killed when (chaos): a run can have
/// been taken over at most once per kill during its life, and a stream may break only when
/// its instance was killed.
#[derive(Debug, Default)]
pub struct Targets {
    pub urls: Vec<String>,
    /// How long a request is retried on other instances while they fail to answer.
    pub retry_for: Duration,
    killed: Mutex<Vec<(String, Instant)>>,
}

impl Targets {
    pub fn new(urls: Vec<String>) -> Targets {
        Targets {
            urls: urls
                .into_iter()
                .map(|u| u.trim_end_matches('/').to_string())
                .collect(),
            killed: Mutex::default(),
            retry_for: RETRY_FOR,
        }
    }

    /// Instance `url` is about to be killed.
    pub fn note_kill(&self, url: &str) {
        if let Ok(mut k) = self.killed.lock() {
            k.push((url.to_string(), Instant::now()));
        }
    }

    pub fn kills(&self) -> usize {
        self.killed.lock().map_or(0, |k| k.len())
    }

    /// Whether `url` was killed within `from..=to`.
    pub fn killed_within(&self, url: &str, from: Instant, to: Instant) -> bool {
        self.killed
            .lock()
            .is_ok_and(|k| k.iter().any(|(u, t)| u == url && (from..=to).contains(t)))
    }

    /// A random instance, other than `not` when there is another.
    pub fn pick(&self, not: Option<&str>) -> &str {
        let mut rng = rand::rng();
        let others: Vec<&String> = self
            .urls
            .iter()
            .filter(|u| Some(u.as_str()) != not)
            .collect();
        if others.is_empty() {
            return &self.urls[rng.random_range(0..self.urls.len())];
        }
        others[rng.random_range(0..others.len())]
    }
}

/// How long a client keeps retrying other instances while one is down.
const RETRY_FOR: Duration = Duration::from_secs(30);

/// Sends `req(base)` to a random instance (not `not`), then to others while the connection
/// fails (the instance is down or died mid-request); the first answer, and who gave it.
pub async fn send_any<F>(
    targets: &Targets,
    not: Option<&str>,
    req: F,
) -> anyhow::Result<(reqwest::Response, String)>
where
    F: Fn(&str) -> reqwest::RequestBuilder,
{
    let t0 = Instant::now();
    let mut base = targets.pick(not).to_string();
    loop {
        match req(&base).send().await {
            Ok(r) => return Ok((r, base)),
            Err(e) if t0.elapsed() > targets.retry_for => {
                anyhow::bail!("no instance answered for {:?}: {e}", targets.retry_for)
            }
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                base = targets.pick(Some(&base)).to_string();
            }
        }
    }
}
