//! The real `reagent` binary with a run in flight: SIGTERM must cancel the run, record its final
//! state and exit 0 within the grace period; `kill -9` must leave a run that the next start
//! marks `failed` ("interrupted by server restart") with a replayable event log. And the binary
//! as a newcomer meets it: started in an empty directory it serves the UI compiled into it (or
//! the `REAGENT_STATIC_DIR` folder), logs where its database and UI are, one access-log line per
//! request and one line per finished run.
//!
//! Each child runs in an empty temp directory (its `config.toml` sets a short
//! `shutdown_grace_s`) with a cleared environment, a temp SQLite database and an in-process
//! [`FakeOpenAi`] whose replies take far longer than the test, so "during a run" is a state, not
//! a timing guess. The child binds port 0 and the test reads the address from its log line.
//!
//! By topic: [`bounds`], [`images`], [`memory`], [`newcomer`], [`shutdown`].

mod bounds;
mod images;
mod memory;
mod newcomer;
mod shutdown;

use std::path::Path;
use std::time::{Duration, Instant};

use reagent::agent::RunStatus;
use reagent::store::Store;
use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};
use serde_json::{json, Value};

use crate::support::child::Server;
use crate::support::sse::{assert_ids_rise_with_one_crash_gap, read_all};

/// `server.shutdown_grace_s` of the children.
const GRACE_S: u64 = 3;

/// Waits (bounded) for the run to leave `running`; its stored state.
async fn finished(server: &Server, run: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let shown = server.get_json(&format!("/api/runs/{run}")).await;
        if shown["status"] != "running" {
            return shown;
        }
        assert!(Instant::now() < deadline, "the run did not finish: {shown}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Starts the binary on `db_url` with `llm` as its only model and waits for it to listen.
async fn start(dir: &Path, db_url: &str, llm: &FakeOpenAi) -> Server {
    start_with(dir, db_url, llm, &[]).await
}

async fn start_with(dir: &Path, db_url: &str, llm: &FakeOpenAi, extra: &[(&str, &str)]) -> Server {
    let url = llm.base_url();
    let mut env = vec![
        ("DATABASE_URL", db_url),
        ("LLM_BASE_URL", url.as_str()),
        ("LLM_MAX_RETRIES", "0"),
        ("RUST_LOG", "info"),
    ];
    env.extend_from_slice(extra);
    Server::serve(dir, &env).await
}

/// A temp dir with a `config.toml` setting a short grace period, and a SQLite URL inside it.
fn workdir() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!("[server]\nshutdown_grace_s = {GRACE_S}\n"),
    )
    .unwrap();
    let db_url = format!("sqlite://{}", dir.path().join("reagent.db").display());
    (dir, db_url)
}
