//! `Server`: the real `reagent` binary as a child process, in a directory of the test's choosing
//! (so the repository's `config.toml` does not leak in) with a cleared environment plus the
//! test's variables. It binds port 0; the address comes from its "listening on" log line. Its
//! output is drained all the time (the child never blocks on a full pipe) into a log the test
//! can read, and echoed with `TEST_LOG=1`. The child is killed when the `Server` is dropped.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

use super::sse::{read_all, read_until, Sse};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_reagent");
/// A safety net for a hung child, not a synchronisation delay.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// Everything a child wrote on one of its pipes, and whether that pipe has closed.
#[derive(Clone, Default)]
struct Output {
    text: Arc<Mutex<String>>,
    closed: Arc<AtomicBool>,
}

impl Output {
    fn drain(&self, mut pipe: impl AsyncRead + Unpin + Send + 'static) -> JoinHandle<()> {
        let out = self.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 8192];
            loop {
                let n = pipe.read(&mut buf).await.unwrap_or(0);
                if n == 0 {
                    break;
                }
                let chunk = String::from_utf8_lossy(&buf[..n]);
                if super::log::enabled() {
                    eprint!("{chunk}");
                }
                out.text.lock().unwrap().push_str(&chunk);
            }
            out.closed.store(true, Ordering::SeqCst);
        })
    }

    /// The address after the first "listening on http://".
    fn listening(&self) -> Option<String> {
        let text = self.text.lock().unwrap();
        let (_, rest) = text.split_once("listening on http://")?;
        let addr: String = rest
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '"')
            .collect();
        // Only once the line is complete.
        (rest.len() > addr.len()).then_some(addr)
    }
}

/// A running `reagent` child.
pub struct Server {
    pub child: Child,
    /// `http://<addr>`.
    pub base: String,
    stdout: Output,
    stderr: Output,
    readers: Vec<JoinHandle<()>>,
}

impl Server {
    /// A size from the server's `/proc/PID/status` (`VmRSS`, `VmHWM` for the peak so far), in
    /// bytes.
    pub fn status_bytes(&self, field: &str) -> u64 {
        let pid = self.child.id().expect("child still running");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("{field} in /proc/PID/status"));
        kb * 1024
    }

    /// `reagent serve` in `dir` with `env` (plus `REAGENT_BIND=127.0.0.1:0`).
    pub async fn serve(dir: &Path, env: &[(&str, &str)]) -> Server {
        let mut vars = vec![("REAGENT_BIND", "127.0.0.1:0")];
        vars.extend_from_slice(env);
        Self::start(dir, &["serve"], &vars).await
    }

    /// `reagent <args>` in `dir` with only `env`; waits until it says where it listens.
    pub async fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
        super::log::init();
        let mut child = command(dir, args, env)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("reagent could not be started");
        let (stdout, stderr) = (Output::default(), Output::default());
        let readers = vec![
            stdout.drain(child.stdout.take().unwrap()),
            stderr.drain(child.stderr.take().unwrap()),
        ];
        let addr = super::eventually("the child's listening line", || {
            let (stdout, stderr) = (&stdout, &stderr);
            async move {
                let addr = stdout.listening().or_else(|| stderr.listening());
                let exited =
                    stdout.closed.load(Ordering::SeqCst) && stderr.closed.load(Ordering::SeqCst);
                assert!(
                    addr.is_some() || !exited,
                    "reagent exited before listening:\n{}",
                    stderr.text.lock().unwrap()
                );
                addr
            }
        })
        .await;
        Server {
            child,
            base: format!("http://{addr}"),
            stdout,
            stderr,
            readers,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// `GET path`, its body as JSON.
    pub async fn get_json(&self, path: &str) -> serde_json::Value {
        reqwest::get(self.url(path))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Starts a run of `query` in a new conversation (201, then 202): (conversation id, run id).
    pub async fn start_run(&self, query: &str) -> (String, String) {
        let client = reqwest::Client::new();
        let r = client
            .post(self.url("/api/conversations"))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
        let conv: Value = r.json().await.unwrap();
        let conv = conv["id"].as_str().unwrap().to_string();
        let r = client
            .post(self.url(&format!("/api/conversations/{conv}/runs")))
            .json(&json!({"query": query}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
        let body: Value = r.json().await.unwrap();
        (conv, body["run_id"].as_str().unwrap().to_string())
    }

    /// Starts a run of `query` in a new conversation and follows its stream until `stop`
    /// (within [`TIMEOUT`]): the run id and what the client saw.
    pub async fn watch(&self, query: &str, stop: impl FnMut(&Sse) -> bool) -> (String, Vec<Sse>) {
        let (_, run) = self.start_run(query).await;
        let r = reqwest::get(self.url(&format!("/api/runs/{run}/events")))
            .await
            .unwrap();
        let (seen, _) = tokio::time::timeout(TIMEOUT, read_until(r, stop))
            .await
            .expect("the run streams");
        (run, seen)
    }

    /// The run's events after `after` (as `Last-Event-ID`), as a client that resumes whenever
    /// its stream ends before `done` (an instance that does not execute the run, or a restarted
    /// one before the killed one's lease lapses, replays what is stored and ends): every
    /// connection's events, in order, within [`TIMEOUT`].
    pub async fn events_until_done(&self, run: &str, mut after: Option<u64>) -> Vec<Sse> {
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        let mut all: Vec<Sse> = Vec::new();
        loop {
            let mut req = reqwest::Client::new().get(self.url(&format!("/api/runs/{run}/events")));
            if let Some(after) = after {
                req = req.header("Last-Event-ID", after.to_string());
            }
            let r = req.send().await.unwrap();
            assert_eq!(r.status(), 200);
            let got = tokio::time::timeout_at(deadline, read_all(r))
                .await
                .expect("the stream ends");
            all.extend(got);
            if all.last().is_some_and(|e| e.event == "done") {
                return all;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "run {run} never reached done"
            );
            after = all.last().map(|e| e.id).or(after);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Sends `signal` (e.g. `-TERM`) with `kill(1)`.
    pub fn signal(&self, signal: &str) {
        let pid = self.child.id().expect("child still running").to_string();
        let sent = std::process::Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap();
        assert!(sent.success(), "kill {signal} {pid}");
    }

    /// Waits for the child to exit.
    pub async fn wait(&mut self) -> ExitStatus {
        tokio::time::timeout(TIMEOUT, self.child.wait())
            .await
            .expect("reagent did not exit")
            .unwrap()
    }

    /// SIGKILL, and the child is gone.
    pub async fn kill9(&mut self) {
        self.child.start_kill().expect("SIGKILL");
        let status = self.wait().await;
        assert!(!status.success(), "SIGKILL cannot exit cleanly: {status}");
    }

    /// What the child wrote on stderr (its log) so far.
    pub fn log(&self) -> String {
        self.stderr.text.lock().unwrap().clone()
    }

    /// Kills the child and returns everything it wrote on stderr (its log).
    pub async fn stop_and_log(mut self) -> String {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        for reader in self.readers.drain(..) {
            reader.await.unwrap();
        }
        let log = self.stderr.text.lock().unwrap().clone();
        log
    }
}

/// `reagent <args>` in `dir` with a cleared environment plus `env`, killed on drop.
pub fn command(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(dir)
        .env_clear()
        .envs(env.iter().copied())
        .kill_on_drop(true);
    cmd
}

/// Runs `reagent <args>` to its end and returns what it printed.
pub async fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let child = command(dir, args, env).output();
    tokio::time::timeout(TIMEOUT, child)
        .await
        .expect("reagent did not exit")
        .expect("reagent could not be started")
}
