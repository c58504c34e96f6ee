//! `Fuse`: a non-idempotent HTTP tool (`charge`) for at-most-once tests. It counts its calls
//! per round and per call (the call's `n`, the number of tool results the model had seen) and,
//! when armed, signals a process (kill -9, or SIGSTOP) at the moment a round's first call
//! arrives — the calling instance, stopped as its call starts — then answers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::routing::post;
use axum::{Json, Router};
use reagent_mock::{MockConfig, MockProvider};
use serde_json::{json, Value};

use super::eventually;
use super::target::Target;

#[derive(Default)]
struct State {
    round: usize,
    /// Calls per (round, n).
    calls: HashMap<(usize, u64), usize>,
    /// The signal and the process it goes to at the round's first call; taken when sent.
    armed: Option<(&'static str, u32)>,
    fired: bool,
}

pub struct Fuse {
    pub target: Target,
    state: Arc<Mutex<State>>,
}

impl Fuse {
    pub async fn serve() -> Fuse {
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        let routes = Router::new().route(
            "/charge",
            post(move |Json(args): Json<Value>| {
                let state = shared.clone();
                async move {
                    let n = args["n"].as_u64().unwrap_or(u64::MAX);
                    let mut st = state.lock().unwrap();
                    let round = st.round;
                    *st.calls.entry((round, n)).or_default() += 1;
                    if let Some((signal, pid)) = st.armed.take().filter(|_| n == 0) {
                        // Sent before answering: the caller stops with its call just made.
                        let sent = std::process::Command::new("kill")
                            .args([signal, &pid.to_string()])
                            .status()
                            .unwrap();
                        assert!(sent.success(), "kill {signal} {pid}");
                        st.fired = true;
                    }
                    Json(json!({"charged": n}))
                }
            }),
        );
        let target = Target::serve("127.0.0.1", routes).await;
        Fuse { target, state }
    }

    /// The `[[tools.http]]` entry: not idempotent, so a call is made at most once.
    pub fn config(&self) -> String {
        format!(
            "[[tools.http]]\nname = \"charge\"\ndescription = \"charges a card\"\nurl = \"{}\"\n\
             idempotent = false\ntimeout_s = 30\n",
            self.target.url("/charge")
        )
    }

    /// Starts round `round`: its first call (n = 0) sends `signal` (`-KILL`, `-STOP`) to `pid`.
    pub fn arm(&self, round: usize, signal: &'static str, pid: u32) {
        let mut st = self.state.lock().unwrap();
        st.round = round;
        st.armed = Some((signal, pid));
        st.fired = false;
    }

    /// Waits until the armed signal was sent.
    pub async fn fired(&self) {
        eventually("the tool call arrived and the signal was sent", || async {
            self.state.lock().unwrap().fired
        })
        .await;
    }

    /// How many times call `n` of `round` arrived.
    pub fn calls(&self, round: usize, n: u64) -> usize {
        let st = self.state.lock().unwrap();
        st.calls.get(&(round, n)).copied().unwrap_or(0)
    }

    /// Every call of `round`, by `n`.
    pub fn round(&self, round: usize) -> Vec<(u64, usize)> {
        let st = self.state.lock().unwrap();
        let mut calls: Vec<(u64, usize)> = st
            .calls
            .iter()
            .filter(|((r, _), _)| *r == round)
            .map(|((_, n), c)| (*n, *c))
            .collect();
        calls.sort_unstable();
        calls
    }
}

/// A mock model that calls `charge` twice (`n` = 0, then 1), then answers.
pub async fn fuse_mock() -> MockProvider {
    MockProvider::start(MockConfig {
        latency: Duration::from_millis(10),
        answer_tokens: 5,
        tool_iterations: 2,
        tool: "charge".into(),
        tool_args: r#"{"n":<i>}"#.into(),
        ..MockConfig::default()
    })
    .await
    .unwrap()
}
