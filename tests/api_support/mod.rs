//! `TestApp`: the real router (built by `App::build`) on `127.0.0.1:0`, a temp SQLite file, a
//! `ScriptedLlm` as the only model and test tools (`echo`, and `gate`, which blocks until the
//! test releases it so "during a tool" is a real state, not a timing guess). Typed helpers for
//! the endpoints and a tiny SSE parser.
//!
//! The scenarios run on both storage backends: [`run_on`] gives each one a fresh database — a
//! temp SQLite file, or a PostgreSQL database `reagent_api_<random>` created on
//! [`PG_ADMIN_URL`] and dropped afterwards (`WITH (FORCE)`, from the admin connection, even when
//! the scenario panics). When PostgreSQL is unreachable the PostgreSQL tests FAIL unless
//! `REAGENT_SKIP_PG=1` is set (the rule of `tests/store.rs`).

#![allow(dead_code)]

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::{FutureExt, StreamExt};
use reagent::config::Config;
use reagent::llm::registry::{ModelInfo, ModelRegistry};
use reagent::llm::{Abilities, Llm};
use reagent::server::{serve, App, AppOverrides};
use reagent::testing::scripted::ScriptedLlm;
use reagent::tools::{Tool, ToolError, ToolOutput, ToolRegistry};
use serde_json::{json, Value};
use tokio::sync::{oneshot, Notify, Semaphore};

/// Answers `echo: <args>` at once.
pub struct Echo;

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Echoes its arguments"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    }
    async fn call(&self, args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("echo: {args}")))
    }
}

/// Produces an HTML artifact.
pub struct Report;

#[async_trait]
impl Tool for Report {
    fn name(&self) -> &str {
        "report"
    }
    fn description(&self) -> &str {
        "Writes an HTML report"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn call(&self, _args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput {
            content: "report written".into(),
            artifacts: vec![reagent::tools::Artifact {
                name: "report.html".into(),
                mime_type: "text/html".into(),
                data: b"<h1>hi</h1>".to_vec(),
            }],
        })
    }
}

/// Blocks until [`Gate::release`] (or forever).
#[derive(Default)]
pub struct Gate {
    release: Notify,
}

impl Gate {
    pub fn release(&self) {
        self.release.notify_one();
    }
}

pub struct GateTool(pub Arc<Gate>);

#[async_trait]
impl Tool for GateTool {
    fn name(&self) -> &str {
        "gate"
    }
    fn description(&self) -> &str {
        "Waits for the test"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn call(&self, _args: Value) -> Result<ToolOutput, ToolError> {
        self.0.release.notified().await;
        Ok(ToolOutput::text("gate opened"))
    }
}

/// A tool that needs a reviewer's approval (SPEC §3.6); counts its real executions so a test
/// can tell "ran" from "blocked".
#[derive(Default)]
pub struct Deploy {
    pub calls: AtomicUsize,
}

impl Deploy {
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

pub struct DeployTool(pub Arc<Deploy>);

#[async_trait]
impl Tool for DeployTool {
    fn name(&self) -> &str {
        "deploy"
    }
    fn description(&self) -> &str {
        "Deploys to an environment"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"env": {"type": "string"}}})
    }
    fn requires_approval(&self) -> bool {
        true
    }
    async fn call(&self, args: Value) -> Result<ToolOutput, ToolError> {
        self.0.calls.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::text(format!("deployed to {}", args["env"])))
    }
}

/// Where the scenarios keep their data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The maintenance database the PostgreSQL tests create and drop their databases from.
pub const PG_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// One scenario's fresh database; [`Db::destroy`] removes it.
pub struct Db {
    pub url: String,
    pg: Option<(sqlx::PgPool, String)>,
    _dir: Option<tempfile::TempDir>,
}

impl Db {
    /// A fresh database, or `None` when PostgreSQL is skipped with `REAGENT_SKIP_PG=1`.
    pub async fn create(backend: Backend) -> Option<Db> {
        match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().unwrap();
                let url = format!("sqlite://{}", dir.path().join("reagent.db").display());
                Some(Db {
                    url,
                    pg: None,
                    _dir: Some(dir),
                })
            }
            Backend::Postgres => {
                if std::env::var("REAGENT_SKIP_PG").as_deref() == Ok("1") {
                    eprintln!("REAGENT_SKIP_PG=1: skipping a PostgreSQL API test");
                    return None;
                }
                let admin = sqlx::PgPool::connect(PG_ADMIN_URL)
                    .await
                    .unwrap_or_else(|e| {
                        panic!(
                            "PostgreSQL unreachable at {PG_ADMIN_URL} ({e}); \
                             set REAGENT_SKIP_PG=1 to skip"
                        )
                    });
                let name = format!("reagent_api_{}", uuid::Uuid::new_v4().simple());
                sqlx::query(&format!("CREATE DATABASE {name}"))
                    .execute(&admin)
                    .await
                    .unwrap();
                Some(Db {
                    url: format!("postgres://postgres@127.0.0.1:5432/{name}"),
                    pg: Some((admin, name)),
                    _dir: None,
                })
            }
        }
    }

    /// Drops the PostgreSQL database (closing the app's leftover connections) or the temp dir.
    pub async fn destroy(self) -> Result<(), sqlx::Error> {
        if let Some((admin, name)) = self.pg {
            let dropped = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&admin)
                .await;
            admin.close().await;
            dropped?;
        }
        Ok(())
    }
}

/// PostgreSQL scenarios running at once. Each app's pool may open up to 10 connections, so on a
/// many-core CI machine unbounded test threads could exceed the server's `max_connections`.
static PG_SLOTS: Semaphore = Semaphore::const_new(4);

/// Runs `scenario` on a fresh database of `backend` (its URL is the argument) and removes the
/// database afterwards, even when the scenario panics.
pub async fn run_on<F, Fut>(backend: Backend, scenario: F)
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = ()>,
{
    let _slot = match backend {
        Backend::Postgres => Some(PG_SLOTS.acquire().await.unwrap()),
        Backend::Sqlite => None,
    };
    let Some(db) = Db::create(backend).await else {
        return;
    };
    let outcome = AssertUnwindSafe(scenario(db.url.clone()))
        .catch_unwind()
        .await;
    let dropped = db.destroy().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    dropped.unwrap();
}

/// One parsed SSE event.
#[derive(Clone, Debug, PartialEq)]
pub struct Sse {
    pub id: u64,
    pub event: String,
    pub data: Value,
}

impl Sse {
    /// `name`, `step:type` or `answer:status`.
    pub fn label(&self) -> String {
        match self.event.as_str() {
            "step" => format!("step:{}", self.data["type"].as_str().unwrap_or("?")),
            "answer" => format!("answer:{}", self.data["status"].as_str().unwrap_or("?")),
            other => other.to_string(),
        }
    }
}

/// Parses complete frames out of `buf`, leaving a partial one; comments are counted.
pub fn parse_frames(buf: &mut String, out: &mut Vec<Sse>, comments: &mut usize) {
    while let Some(end) = buf.find("\n\n") {
        let frame: String = buf.drain(..end + 2).collect();
        let (mut id, mut event, mut data) = (0, String::new(), String::new());
        for line in frame.lines() {
            if let Some(v) = line.strip_prefix("id: ") {
                id = v.parse().unwrap();
            } else if let Some(v) = line.strip_prefix("event: ") {
                event = v.to_string();
            } else if let Some(v) = line.strip_prefix("data: ") {
                data.push_str(v);
            } else if line.starts_with(':') {
                *comments += 1;
            }
        }
        if !event.is_empty() {
            out.push(Sse {
                id,
                event,
                data: serde_json::from_str(&data).unwrap(),
            });
        }
    }
}

/// Appends the text of `chunk` to `buf`. A chunk may end inside a multi-byte UTF-8 character:
/// those bytes wait in `pending` for the next chunk.
pub fn push_utf8(pending: &mut Vec<u8>, buf: &mut String, chunk: &[u8]) {
    pending.extend_from_slice(chunk);
    let valid = match std::str::from_utf8(pending) {
        Ok(text) => text.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(e) => panic!("the SSE body is not UTF-8: {e}"),
    };
    buf.push_str(std::str::from_utf8(&pending[..valid]).unwrap());
    pending.drain(..valid);
}

/// Reads a whole SSE response until it closes.
pub async fn read_all(response: reqwest::Response) -> Vec<Sse> {
    read_until(response, |_| false).await.0
}

/// Reads until `stop` says so (then drops the connection) or the stream ends.
pub async fn read_until(
    response: reqwest::Response,
    mut stop: impl FnMut(&Sse) -> bool,
) -> (Vec<Sse>, usize) {
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream",
        "not an event stream"
    );
    let mut body = response.bytes_stream();
    let (mut buf, mut events, mut comments) = (String::new(), Vec::new(), 0);
    // Bytes not yet decoded: a chunk may end inside a multi-byte UTF-8 character.
    let mut pending: Vec<u8> = Vec::new();
    let read = async {
        while let Some(chunk) = body.next().await {
            push_utf8(&mut pending, &mut buf, &chunk.unwrap());
            let before = events.len();
            parse_frames(&mut buf, &mut events, &mut comments);
            if events[before..].iter().any(&mut stop) {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .expect("SSE stream took too long");
    (events, comments)
}

pub struct TestApp {
    pub addr: std::net::SocketAddr,
    pub app: App,
    pub llm: Arc<ScriptedLlm>,
    pub gate: Arc<Gate>,
    pub client: reqwest::Client,
    pub key: Option<String>,
    pub db_url: String,
    stop: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
    _dir: Option<tempfile::TempDir>,
}

pub struct Options {
    pub llm: ScriptedLlm,
    pub env: Vec<(&'static str, String)>,
    pub keep_alive: Duration,
    /// Reuse this database (restart tests); a fresh temp file otherwise.
    pub db_url: Option<String>,
    /// Extra lines of the `[server]` section.
    pub server_toml: String,
    /// Extra configuration sections (`[auth]`, `[[hooks]]`…), after `[server]`.
    pub toml: String,
    /// Registered after the standard test tools.
    pub extra_tools: Vec<Arc<dyn Tool>>,
    /// Use the configuration's models (e.g. `LLM_BASE_URL` pointing at a `FakeOpenAi`) instead
    /// of the `ScriptedLlm`, so the real OpenAI client is in the path.
    pub config_models: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            llm: ScriptedLlm::native(),
            env: Vec::new(),
            keep_alive: Duration::from_secs(15),
            db_url: None,
            server_toml: String::new(),
            toml: String::new(),
            extra_tools: Vec::new(),
            config_models: false,
        }
    }
}

pub fn scripted_info(abilities: Abilities) -> ModelInfo {
    ModelInfo {
        name: "scripted".into(),
        model: "scripted".into(),
        abilities,
        context_window: 128_000,
        max_output_tokens: 4096,
        hints: vec![],
        default: true,
    }
}

impl TestApp {
    pub async fn spawn() -> TestApp {
        Self::with(Options::default()).await
    }

    /// The default app on the given database (a scenario's [`run_on`] URL).
    pub async fn spawn_on(db_url: &str) -> TestApp {
        Self::with(Options {
            db_url: Some(db_url.to_string()),
            ..Options::default()
        })
        .await
    }

    pub async fn with(options: Options) -> TestApp {
        let (dir, db_url) = match options.db_url {
            Some(url) => (None, url),
            None => {
                let dir = tempfile::tempdir().unwrap();
                let url = format!("sqlite://{}", dir.path().join("reagent.db").display());
                (Some(dir), url)
            }
        };
        let mut env: HashMap<String, String> = HashMap::new();
        env.insert("DATABASE_URL".into(), db_url.clone());
        for (k, v) in options.env {
            env.insert(k.into(), v);
        }
        let file = format!(
            "[server]\nstatic_dir = \"{}/static\"\n{}\n{}\n",
            env!("CARGO_MANIFEST_DIR"),
            options.server_toml,
            options.toml
        );
        let config = Config::load_from(Some(&file), &env).unwrap();
        let llm = Arc::new(options.llm);
        let abilities = llm.abilities();
        let models = ModelRegistry::from_llms(
            vec![(scripted_info(abilities), llm.clone() as Arc<dyn Llm>)],
            "scripted",
        )
        .unwrap();
        let gate = Arc::new(Gate::default());
        let mut tools = ToolRegistry::new()
            .with(Arc::new(Echo))
            .with(Arc::new(GateTool(gate.clone())))
            .with(Arc::new(Report));
        for tool in options.extra_tools {
            tools.register(tool);
        }
        let app = App::build(
            config,
            AppOverrides {
                models: (!options.config_models).then_some(models),
                tools: Some(tools),
                keep_alive: Some(options.keep_alive),
                flush_interval: Some(Duration::from_millis(1)),
            },
        )
        .await
        .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let router = app.router();
        let server = tokio::spawn(async move {
            serve(listener, router, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        TestApp {
            addr,
            app,
            llm,
            gate,
            client: reqwest::Client::new(),
            key: None,
            db_url,
            stop: Some(stop),
            server: Some(server),
            _dir: dir,
        }
    }

    /// Stops runs and the server and closes the database, keeping the temp dir alive in the
    /// returned value (for restart tests).
    pub async fn stop(mut self) -> Option<tempfile::TempDir> {
        self.app.shutdown(Duration::from_secs(2)).await;
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            server.abort();
        }
        self._dir.take()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    fn auth(&self, rb: reqwest::RequestBuilder, key: Option<&str>) -> reqwest::RequestBuilder {
        match key.or(self.key.as_deref()) {
            Some(k) => rb.bearer_auth(k),
            None => rb,
        }
    }

    pub async fn get(&self, path: &str, key: Option<&str>) -> reqwest::Response {
        self.auth(self.client.get(self.url(path)), key)
            .send()
            .await
            .unwrap()
    }

    pub async fn post(&self, path: &str, body: Value, key: Option<&str>) -> reqwest::Response {
        self.auth(self.client.post(self.url(path)).json(&body), key)
            .send()
            .await
            .unwrap()
    }

    pub async fn delete(&self, path: &str, key: Option<&str>) -> reqwest::Response {
        self.auth(self.client.delete(self.url(path)), key)
            .send()
            .await
            .unwrap()
    }

    pub async fn create_conversation(&self, key: Option<&str>) -> String {
        let r = self
            .post("/api/conversations", json!({"title": "t"}), key)
            .await;
        assert_eq!(r.status(), 201);
        let body: Value = r.json().await.unwrap();
        body["id"].as_str().unwrap().to_string()
    }

    /// Starts a run (202) and returns its id.
    pub async fn start_run(&self, conversation: &str, body: Value, key: Option<&str>) -> String {
        let r = self
            .post(
                &format!("/api/conversations/{conversation}/runs"),
                body,
                key,
            )
            .await;
        assert_eq!(r.status(), 202, "{:?}", r.text().await);
        let body: Value = r.json().await.unwrap();
        body["run_id"].as_str().unwrap().to_string()
    }

    /// The events endpoint's response, resuming after `after` via `Last-Event-ID`.
    pub async fn events_response(&self, run: &str, after: Option<u64>) -> reqwest::Response {
        let mut rb = self.auth(
            self.client
                .get(self.url(&format!("/api/runs/{run}/events"))),
            None,
        );
        if let Some(n) = after {
            rb = rb.header("Last-Event-ID", n.to_string());
        }
        rb.send().await.unwrap()
    }

    /// Every event of the run after `after`, until the stream closes (after `done`).
    pub async fn events(&self, run: &str, after: Option<u64>) -> Vec<Sse> {
        let r = self.events_response(run, after).await;
        assert_eq!(r.status(), 200);
        read_all(r).await
    }

    /// Reads the run's stream until an event matches, then disconnects.
    pub async fn wait_for(&self, run: &str, pred: impl FnMut(&Sse) -> bool) -> Vec<Sse> {
        let r = self.events_response(run, None).await;
        read_until(r, pred).await.0
    }

    pub async fn interrupt(&self, conversation: &str, content: &str) -> reqwest::Response {
        self.post(
            &format!("/api/conversations/{conversation}/interrupt"),
            json!({"content": content}),
            None,
        )
        .await
    }

    pub async fn cancel(&self, run: &str) -> reqwest::Response {
        self.post(&format!("/api/runs/{run}/cancel"), json!({}), None)
            .await
    }
}

/// The error code of a JSON error response, checking the status too.
pub async fn error_code(response: reqwest::Response, status: u16) -> String {
    assert_eq!(response.status(), status);
    let body: Value = response.json().await.unwrap();
    body["error"]["message"].as_str().expect("error.message");
    body["error"]["code"].as_str().unwrap().to_string()
}

/// Starts the real binary (`reagent serve`) in `dir` with a cleared environment plus `env`
/// (`REAGENT_BIND=127.0.0.1:0` is added), waits for its "listening on" log line, and keeps
/// draining its log so the child never blocks on a full pipe. Returns the child (killed on drop)
/// and the base URL.
pub async fn spawn_serve(
    dir: &std::path::Path,
    env: &[(&str, &str)],
    timeout: Duration,
) -> (tokio::process::Child, String) {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_reagent"))
        .arg("serve")
        .current_dir(dir)
        .env_clear()
        .env("REAGENT_BIND", "127.0.0.1:0")
        .envs(env.iter().copied())
        .kill_on_drop(true)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("reagent could not be started");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let find_addr = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some((_, rest)) = line.split_once("listening on http://") {
                return rest.trim().to_string();
            }
        }
        panic!("reagent exited before listening");
    };
    let addr = tokio::time::timeout(timeout, find_addr)
        .await
        .expect("no listening line");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, format!("http://{addr}"))
}
