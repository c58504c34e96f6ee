//! Remote A2A agents as tools (`[[a2a]]`, docs/protocols.md) against a real remote: our own
//! agent written with the official Python `a2a-sdk` (`tests/peers/a2a_remote.py`: status
//! updates then an artifact, a failure, an input request, a task that blocks until cancelled;
//! a v0.3 card, a server refusing the v1.0 names, one that does not stream, a card naming
//! another host). Runs use the scripted LLM calling the agent's tool; the peer's log says what
//! it received. `scripts/peers.sh` installs the peer's packages.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use reagent::app::{App, AppOverrides};
use reagent::config::Config;
use reagent::testing::scripted::ScriptedLlm;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::support::app::{Options, TestApp};
use crate::support::peers;
use crate::support::sse::{read_until, Sse};

/// The remote agent, listening; killed when dropped.
struct Remote {
    port: u16,
    log: PathBuf,
    _child: Child,
    _dir: tempfile::TempDir,
}

impl Remote {
    async fn start(args: &[&str]) -> Remote {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("remote.log");
        let mut child = Command::new(peers::python())
            .arg(peers::dir().join("a2a_remote.py"))
            .args(args)
            .env("A2A_REMOTE_LOG", &log)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = tokio::time::timeout(std::time::Duration::from_secs(60), lines.next_line())
            .await
            .expect("the A2A remote did not start within 60 s")
            .unwrap()
            .unwrap_or_default();
        let port = line
            .strip_prefix("PORT ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("the A2A remote said {line:?}"));
        Remote {
            port,
            log,
            _child: child,
            _dir: dir,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn log(&self) -> String {
        read(&self.log)
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// An `[[a2a]]` entry named `remote` for `url`, with `extra` lines.
fn entry(url: &str, extra: &str) -> String {
    format!(
        "[[a2a]]\nname = \"remote\"\nurl = {url:?}\nheaders = {{ X-Test = \"yes\" }}\n{extra}\n"
    )
}

/// An app whose tools are the configuration's (built-ins and `[[a2a]]`) and the scripted LLM.
async fn app_with(llm: ScriptedLlm, toml: &str) -> TestApp {
    TestApp::with(Options {
        llm,
        toml: toml.to_string(),
        config_tools: true,
        env: vec![
            ("REACT_COMPLETION_CHECK_MIN_TOOLS", "100".into()),
            ("REACT_TOOL_SELECTION_THRESHOLD", "100".into()),
        ],
        ..Options::default()
    })
    .await
}

/// The scripted model calls `remote` with `message`, then answers "done".
fn asking(message: &str) -> ScriptedLlm {
    let llm = ScriptedLlm::native();
    let args = json!({ "message": message }).to_string();
    llm.tool_calls(&[("c1", "remote", args.as_str())]);
    llm.text("done");
    llm
}

async fn run(app: &TestApp, query: &str) -> Vec<Sse> {
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({ "query": query }), None).await;
    app.events(&run, None).await
}

fn tool_end(events: &[Sse]) -> Value {
    events
        .iter()
        .find(|e| e.label() == "step:tool_end")
        .map(|e| e.data.clone())
        .unwrap_or_else(|| panic!("no tool_end: {events:?}"))
}

fn progress(events: &[Sse]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.label() == "step:tool_progress")
        .map(|e| e.data["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn observation(end: &Value) -> &str {
    end["observation"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn the_answer_is_the_observation_and_status_updates_are_steps() {
    let remote = Remote::start(&[]).await;
    let app = app_with(asking("hello there"), &entry(&remote.url(), "")).await;
    let events = run(&app, "go").await;
    let end = tool_end(&events);
    assert_eq!(end["error"], false, "{end}");
    assert_eq!(observation(&end), "remote answer: hello there");
    assert_eq!(
        progress(&events),
        ["remote: reading hello there", "remote: writing"]
    );
    let labels: Vec<String> = events.iter().map(|e| e.label()).collect();
    let start = labels.iter().position(|l| l == "step:tool_start").unwrap();
    let first = labels
        .iter()
        .position(|l| l == "step:tool_progress")
        .unwrap();
    let stop = labels.iter().position(|l| l == "step:tool_end").unwrap();
    assert!(start < first && first < stop, "{labels:?}");
    let step = events
        .iter()
        .find(|e| e.label() == "step:tool_progress")
        .unwrap();
    assert_eq!(step.data["call_id"], "c1");
    assert_eq!(step.data["tool"], "remote");
    assert!(
        remote
            .log()
            .contains("method SendStreamingMessage x-test=yes"),
        "{}",
        remote.log()
    );
    let tools: Value = app.get_json("/api/tools", None).await;
    let listed = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "remote");
    let listed = listed.unwrap_or_else(|| panic!("remote not in {tools}"));
    assert_eq!(listed["source"], "a2a");
    assert_eq!(listed["parameters"]["required"], json!(["message"]));
    app.stop().await;
}

#[tokio::test]
async fn a_failed_task_is_an_error_observation_with_the_remotes_reason() {
    let remote = Remote::start(&[]).await;
    let app = app_with(asking("fail now"), &entry(&remote.url(), "")).await;
    let end = tool_end(&run(&app, "go").await);
    assert_eq!(end["error"], true, "{end}");
    assert!(
        observation(&end).contains("the remote agent broke"),
        "{end}"
    );
    app.stop().await;
}

#[tokio::test]
async fn an_input_request_is_an_error_observation_and_the_waiting_task_is_cancelled() {
    let remote = Remote::start(&[]).await;
    let app = app_with(asking("input"), &entry(&remote.url(), "")).await;
    let end = tool_end(&run(&app, "go").await);
    assert_eq!(end["error"], true, "{end}");
    assert!(
        observation(&end).contains("needs more input: which city?"),
        "{end}"
    );
    crate::support::eventually("the remote saw the cancel", || async {
        remote.log().contains("method CancelTask")
    })
    .await;
    app.stop().await;
}

#[tokio::test]
async fn a_remote_that_does_not_stream_is_sent_the_message() {
    let remote = Remote::start(&["--no-streaming"]).await;
    let app = app_with(asking("hello sync"), &entry(&remote.url(), "")).await;
    let events = run(&app, "go").await;
    let end = tool_end(&events);
    assert_eq!(observation(&end), "remote answer: hello sync", "{end}");
    assert_eq!(
        progress(&events),
        ["remote: reading hello sync", "remote: writing"]
    );
    let log = remote.log();
    assert!(log.contains("method SendMessage"), "{log}");
    assert!(!log.contains("method SendStreamingMessage"), "{log}");
    app.stop().await;
}

#[tokio::test]
async fn v03_remotes_are_called_by_the_v03_names() {
    // A v0.3 card: the v0.3 names at once.
    let remote = Remote::start(&["--v03-card", "--refuse-v1"]).await;
    let app = app_with(asking("hello old"), &entry(&remote.url(), "")).await;
    let events = run(&app, "go").await;
    assert_eq!(observation(&tool_end(&events)), "remote answer: hello old");
    assert_eq!(progress(&events).len(), 2, "{events:?}");
    let log = remote.log();
    assert!(log.contains("method message/stream"), "{log}");
    assert!(!log.contains("method SendStreamingMessage"), "{log}");
    app.stop().await;

    // A v1.0 card on a server that knows only the v0.3 names: the fallback after -32601.
    let remote = Remote::start(&["--refuse-v1"]).await;
    let app = app_with(asking("hello skew"), &entry(&remote.url(), "")).await;
    let end = tool_end(&run(&app, "go").await);
    assert_eq!(observation(&end), "remote answer: hello skew", "{end}");
    let log = remote.log();
    let v1 = log
        .find("method SendStreamingMessage")
        .expect("tried v1.0 first");
    let v03 = log.find("method message/stream").expect("then v0.3");
    assert!(v1 < v03, "{log}");
    app.stop().await;
}

#[tokio::test]
async fn a_dead_remote_degrades_to_an_error_observation() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let app = app_with(asking("anyone?"), &entry(&url, "")).await;
    let health = app.get("/healthz", None).await;
    assert!(health.status().is_success());
    let end = tool_end(&run(&app, "go").await);
    assert_eq!(end["error"], true, "{end}");
    let text = observation(&end);
    assert!(
        text.contains("A2A agent 'remote' is unavailable") && text.contains("agent-card.json"),
        "{end}"
    );
    app.stop().await;
}

#[tokio::test]
async fn cancelling_the_run_cancels_the_remote_task() {
    let remote = Remote::start(&[]).await;
    let app = app_with(asking("block"), &entry(&remote.url(), "timeout_s = 300")).await;
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "go"}), None).await;
    // Once the run shows the remote's status update, reagent knows the remote task's id.
    let response = app.events_response(&run, None).await;
    let (seen, _) = read_until(response, |e| e.label() == "step:tool_progress").await;
    assert_eq!(progress(&seen), ["remote: blocking"]);
    assert!(remote.log().contains("blocking"), "{}", remote.log());
    app.cancel(&run).await;
    crate::support::eventually("the remote saw the cancel", || async {
        remote.log().contains("cancelled")
    })
    .await;
    let events = app.events(&run, None).await;
    assert_eq!(progress(&events), ["remote: blocking"]);
    app.stop().await;
}

#[tokio::test]
async fn the_timeout_ends_the_call_and_cancels_the_remote_task() {
    let remote = Remote::start(&[]).await;
    let app = app_with(asking("block"), &entry(&remote.url(), "timeout_s = 2")).await;
    let end = tool_end(&run(&app, "go").await);
    assert_eq!(end["error"], true, "{end}");
    assert!(observation(&end).contains("timed out after 2 s"), "{end}");
    crate::support::eventually("the remote saw the cancel", || async {
        remote.log().contains("cancelled")
    })
    .await;
    app.stop().await;
}

#[tokio::test]
async fn a_card_naming_another_origin_is_held_to_the_ssrf_rules() {
    // The card names `localhost`: another origin than the configured 127.0.0.1, and loopback.
    let remote = Remote::start(&["--card-host", "localhost"]).await;
    let app = app_with(asking("hello"), &entry(&remote.url(), "")).await;
    let end = tool_end(&run(&app, "go").await);
    assert_eq!(end["error"], true, "{end}");
    let text = observation(&end);
    assert!(
        text.contains("points to http://localhost") && text.contains("not allowed"),
        "{end}"
    );
    assert!(!remote.log().contains("method"), "{}", remote.log());
    app.stop().await;

    // Private addresses allowed: the call goes through, without the configured headers.
    let toml = format!(
        "[tools]\nallow_private_http = true\n{}",
        entry(&remote.url(), "")
    );
    let app = app_with(asking("hello"), &toml).await;
    let end = tool_end(&run(&app, "go").await);
    assert_eq!(observation(&end), "remote answer: hello", "{end}");
    let log = remote.log();
    assert!(
        log.contains("method SendStreamingMessage x-test=\n"),
        "{log}"
    );
    app.stop().await;
}

#[tokio::test]
async fn bad_configuration_fails_start_up_with_a_clear_error() {
    let build = |toml: &str| {
        let toml = toml.to_string();
        async move {
            let dir = tempfile::tempdir().unwrap();
            let db = format!("sqlite://{}", dir.path().join("r.db").display());
            let env = [("DATABASE_URL".to_string(), db)].into_iter().collect();
            let config = Config::load_from(Some(&toml), &env).map_err(|e| e.to_string())?;
            App::build(config, AppOverrides::default())
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
    };
    let clash = build("[[a2a]]\nname = \"calculator\"\nurl = \"http://127.0.0.1:9\"\n").await;
    let clash = clash.unwrap_err();
    assert!(
        clash.contains("a2a: the A2A agent 'calculator' has the name of the builtin tool"),
        "{clash}"
    );
    let bad_url = build("[[a2a]]\nname = \"r\"\nurl = \"file:///etc/passwd\"\n").await;
    let bad_url = bad_url.unwrap_err();
    assert!(
        bad_url.contains("a2a[0].url") && bad_url.contains("http(s) URL"),
        "{bad_url}"
    );
    let missing =
        build("[[a2a]]\nname = \"r\"\nurl = \"http://h\"\nheaders = { A = \"${NOT_SET_X}\" }\n")
            .await;
    let missing = missing.unwrap_err();
    assert!(
        missing.contains("a2a[0].headers") && missing.contains("NOT_SET_X"),
        "{missing}"
    );
}
