//! `TestApp`: the real router (built by `App::build`) on `127.0.0.1:0`, a temp SQLite file (or
//! a scenario's database from [`super::backends::run_on`]), a `ScriptedLlm` as the only model
//! and the standard test tools: `echo`, `report` (an HTML artifact) and `gate`, which blocks
//! until the test releases it so "during a tool" is a real state, not a timing guess. Typed
//! helpers for the endpoints; SSE reading is in [`super::sse`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use reagent::app::{App, AppOverrides};
use reagent::config::Config;
use reagent::llm::registry::{ModelInfo, ModelRegistry};
use reagent::llm::{Abilities, Llm};
use reagent::server::serve;
use reagent::testing::scripted::ScriptedLlm;
use reagent::tools::{Tool, ToolRegistry};
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::sse::{read_all, read_until, Sse};
use super::tools::{FakeTool, Gate};

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
    /// Build the tools from the configuration (`[[tools.http]]` with the app's own HTTP client)
    /// instead of the standard test tools.
    pub config_tools: bool,
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
            config_tools: false,
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
        roles: vec![],
        default: true,
        needs_key: false,
        demo: false,
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
        super::log::init();
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
            .with(FakeTool::echo("echo").arc())
            .with(
                FakeTool::gated("gate", gate.clone(), "gate opened")
                    .describe("Waits for the test")
                    .params(json!({"type": "object", "properties": {}}))
                    .arc(),
            )
            .with(
                FakeTool::text("report", "report written")
                    .describe("Writes an HTML report")
                    .params(json!({"type": "object", "properties": {}}))
                    .artifact("report.html", "text/html", b"<h1>hi</h1>")
                    .arc(),
            );
        for tool in options.extra_tools {
            tools.register(tool);
        }
        let app = App::build(
            config,
            AppOverrides {
                models: (!options.config_models).then_some(models),
                tools: (!options.config_tools).then_some(tools),
                keep_alive: Some(options.keep_alive),
                flush_interval: Some(Duration::from_millis(1)),
                ..AppOverrides::default()
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

    /// The JSON body of a GET, whatever its status: for tests reading a resource they made.
    pub async fn get_json(&self, path: &str, key: Option<&str>) -> Value {
        self.get(path, key).await.json().await.unwrap()
    }

    pub async fn post(&self, path: &str, body: Value, key: Option<&str>) -> reqwest::Response {
        self.auth(self.client.post(self.url(path)).json(&body), key)
            .send()
            .await
            .unwrap()
    }

    pub async fn put(&self, path: &str, body: Value, key: Option<&str>) -> reqwest::Response {
        self.auth(self.client.put(self.url(path)).json(&body), key)
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
