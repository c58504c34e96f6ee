//! Child processes: `reagent mock-provider` and `reagent serve`, found next to this executable,
//! each in a fresh temporary directory with a fresh SQLite database and free ports; the
//! service is configured through environment variables only (docs/configuration.md).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How the mock provider behaves (its CLI flags).
#[derive(Clone, Debug)]
pub struct MockFlags {
    pub latency_ms: u64,
    pub first_call_latency_ms: Option<u64>,
    pub tokens_per_s: f64,
    pub answer_tokens: usize,
    pub tool_iterations: usize,
    pub error_rate: f64,
    pub seed: u64,
    pub stamp_tokens: bool,
}

impl Default for MockFlags {
    fn default() -> Self {
        MockFlags {
            latency_ms: 0,
            first_call_latency_ms: None,
            tokens_per_s: 0.0,
            answer_tokens: 20,
            tool_iterations: 1,
            error_rate: 0.0,
            seed: 1,
            stamp_tokens: false,
        }
    }
}

/// `reagent` next to this executable (`target/<profile>/`), or `$REAGENT_BIN`.
pub fn reagent_bin() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("REAGENT_BIN") {
        return Ok(PathBuf::from(p));
    }
    let me = std::env::current_exe().context("cannot find this executable")?;
    let bin = me.with_file_name("reagent");
    if !bin.exists() {
        bail!(
            "{} not found: build it (`cargo build --bins`) or set REAGENT_BIN",
            bin.display()
        );
    }
    Ok(bin)
}

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> anyhow::Result<TempDir> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir =
            std::env::temp_dir().join(format!("reagent-loadgen-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(TempDir(dir))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The running mock provider.
pub struct Mock {
    _child: Child,
    pub base_url: String,
}

impl Mock {
    pub async fn start(flags: &MockFlags) -> anyhow::Result<Mock> {
        let mut cmd = Command::new(reagent_bin()?);
        cmd.args([
            "mock-provider",
            "--bind",
            "127.0.0.1:0",
            "--latency-ms",
            &flags.latency_ms.to_string(),
            "--tokens-per-s",
            &flags.tokens_per_s.to_string(),
            "--answer-tokens",
            &flags.answer_tokens.to_string(),
            "--tool-iterations",
            &flags.tool_iterations.to_string(),
            "--error-rate",
            &flags.error_rate.to_string(),
            "--seed",
            &flags.seed.to_string(),
        ]);
        if let Some(ms) = flags.first_call_latency_ms {
            cmd.args(["--first-call-latency-ms", &ms.to_string()]);
        }
        if flags.stamp_tokens {
            cmd.arg("--stamp-tokens");
        }
        let mut child = cmd
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("cannot start reagent mock-provider")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .context("mock provider did not start within 20 s")??
            .context("mock provider exited")?;
        let addr = line
            .split("http://")
            .nth(1)
            .context("unexpected mock provider banner")?
            .trim()
            .to_string();
        Ok(Mock {
            _child: child,
            base_url: format!("http://{addr}/v1"),
        })
    }
}

/// A free TCP port on 127.0.0.1 (bound then released).
pub fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// The running service.
pub struct Server {
    pub child: Child,
    pub base: String,
    pub pid: u32,
    /// Time from spawn to the first `/readyz` 200.
    pub ready_after: Duration,
}

/// `--llm-http2`: set once at start-up, read wherever a server or the relay is spawned.
static LLM_HTTP2: AtomicBool = AtomicBool::new(false);

pub fn set_llm_http2(on: bool) {
    LLM_HTTP2.store(on, Ordering::Relaxed);
}

pub fn llm_http2() -> bool {
    LLM_HTTP2.load(Ordering::Relaxed)
}

/// Everything needed to (re)start the service on the same database.
pub struct ServerSpec {
    pub dir: TempDir,
    pub env: Vec<(String, String)>,
}

impl ServerSpec {
    /// A fresh database in a fresh directory, the mock as the default model, and `extra`
    /// variables on top (they win).
    pub fn new(mock_url: &str, extra: &[(&str, String)]) -> anyhow::Result<ServerSpec> {
        let dir = TempDir::new()?;
        let db = dir.path().join("reagent.db");
        let mut env: Vec<(String, String)> = vec![
            ("DATABASE_URL".into(), format!("sqlite://{}", db.display())),
            ("LLM_BASE_URL".into(), mock_url.into()),
            ("LLM_MODEL".into(), "mock-model".into()),
            ("LLM_MAX_RETRIES".into(), "3".into()),
            ("RUST_LOG".into(), "info".into()),
        ];
        if llm_http2() {
            env.push(("LLM_HTTP2".into(), "true".into()));
        }
        for (k, v) in extra {
            env.retain(|(key, _)| key != k);
            env.push((k.to_string(), v.clone()));
        }
        Ok(ServerSpec { dir, env })
    }

    pub fn db_path(&self) -> PathBuf {
        self.dir.path().join("reagent.db")
    }

    /// Starts `reagent serve` (logs to `serve.log` in the directory) and waits for `/readyz`.
    pub async fn start(&self, http: &reqwest::Client) -> anyhow::Result<Server> {
        self.start_at(http, free_port()?).await
    }

    /// [`ServerSpec::start`] on a given port (an instance restarted where clients expect it).
    pub async fn start_at(&self, http: &reqwest::Client, port: u16) -> anyhow::Result<Server> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("serve.log"))?;
        let t0 = Instant::now();
        let child = Command::new(reagent_bin()?)
            .arg("serve")
            .current_dir(self.dir.path())
            .env_remove("REAGENT_CONFIG")
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("REAGENT_BIND", format!("127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .context("cannot start reagent serve")?;
        let pid = child.id().context("no pid")?;
        let base = format!("http://127.0.0.1:{port}");
        let mut server = Server {
            child,
            base,
            pid,
            ready_after: Duration::ZERO,
        };
        let ready = format!("{}/readyz", server.base);
        loop {
            if let Ok(r) = http.get(&ready).send().await {
                if r.status().is_success() {
                    break;
                }
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                bail!(
                    "reagent serve exited with {status}; see {}",
                    self.dir.path().join("serve.log").display()
                );
            }
            if t0.elapsed() > Duration::from_secs(30) {
                bail!("reagent serve not ready after 30 s");
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        server.ready_after = t0.elapsed();
        Ok(server)
    }
}

impl Server {
    /// SIGTERM, then wait for the exit (kill after `grace`).
    #[allow(unsafe_code)] // kill(2): libc, tokio's Child can only SIGKILL.
    pub async fn stop(mut self, grace: Duration) -> anyhow::Result<std::process::ExitStatus> {
        // SAFETY: signalling our own child by pid.
        unsafe {
            libc::kill(self.pid as i32, libc::SIGTERM);
        }
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(status) => Ok(status?),
            Err(_) => {
                self.child.kill().await?;
                bail!("reagent serve did not stop within {grace:?} of SIGTERM")
            }
        }
    }
}

/// Settings that make the mock's tool script deterministic: no reflection or completion-check
/// user messages (they would restart the mock's count of tool results).
pub const SCRIPTED: [(&str, &str); 2] = [
    ("REACT_SELF_REFLECTION_INTERVAL", "0"),
    ("REACT_COMPLETION_CHECK_MIN_TOOLS", "1000000"),
];

/// A mock provider and a server on a fresh database.
pub struct Stack {
    pub mock: Mock,
    pub spec: ServerSpec,
    pub server: Server,
}

impl Stack {
    pub async fn start(
        http: &reqwest::Client,
        flags: &MockFlags,
        extra: &[(&str, String)],
    ) -> anyhow::Result<Stack> {
        let mock = Mock::start(flags).await?;
        let mut env: Vec<(&str, String)> =
            SCRIPTED.iter().map(|(k, v)| (*k, v.to_string())).collect();
        env.extend(extra.iter().cloned());
        let spec = ServerSpec::new(&mock.base_url, &env)?;
        let server = spec.start(http).await?;
        // Let the allocator and runtime settle before "idle" is read.
        tokio::time::sleep(Duration::from_millis(300)).await;
        Ok(Stack { mock, spec, server })
    }

    pub async fn stop(self) -> anyhow::Result<()> {
        self.server.stop(Duration::from_secs(20)).await?;
        Ok(())
    }
}
