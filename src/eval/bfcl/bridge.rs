//! The Python side: `evals/bfcl/bridge.py serve` (built into the binary, written to the eval's
//! folder and run by the Python that has `bfcl-eval`), one JSON request and one JSON answer per
//! line. It holds BFCL's entries, the multi-turn backends' state and BFCL's checkers.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::Context;
use serde_json::Value as Json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

/// The bridge's source, so that `reagent eval --bfcl` runs from any folder.
const SCRIPT: &str = include_str!("../../../evals/bfcl/bridge.py");

/// Where `scripts/bfcl.sh setup` puts the Python with `bfcl-eval` (evals/README.md).
pub fn default_python() -> PathBuf {
    let home = std::env::var_os("HOME").unwrap_or_default();
    PathBuf::from(home).join(".cache/reagent-bfcl/venv/bin/python")
}

/// The running bridge. Requests go one at a time (its state is one Python process).
pub struct Bridge {
    io: Mutex<Io>,
    _child: Child,
}

struct Io {
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Bridge {
    /// Starts `python bridge.py serve` with the script written into `dir`; BFCL's own output
    /// goes to this process's stderr.
    pub async fn start(python: &Path, dir: &Path) -> anyhow::Result<Bridge> {
        let script = dir.join("bfcl_bridge.py");
        std::fs::write(&script, SCRIPT)
            .with_context(|| format!("cannot write {}", script.display()))?;
        let mut child = Command::new(python)
            .arg(&script)
            .arg("serve")
            .env("BFCL_PROJECT_ROOT", dir.join("bfcl"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot run {}", python.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            anyhow::bail!("the bridge's pipes were not opened");
        };
        let io = Io {
            stdin,
            stdout: BufReader::new(stdout).lines(),
        };
        Ok(Bridge {
            io: Mutex::new(io),
            _child: child,
        })
    }

    /// Sends one request and reads its answer; the bridge's `{"error": …}` is an error here.
    pub async fn call(&self, request: &Json) -> Result<Json, String> {
        let mut io = self.io.lock().await;
        let mut line = request.to_string();
        line.push('\n');
        io.stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|e| format!("the BFCL bridge stopped: {e}"))?;
        io.stdin
            .flush()
            .await
            .map_err(|e| format!("the BFCL bridge stopped: {e}"))?;
        let answer = match io.stdout.next_line().await {
            Ok(Some(answer)) => answer,
            Ok(None) => return Err("the BFCL bridge stopped (see its output above)".into()),
            Err(e) => return Err(format!("the BFCL bridge's output: {e}")),
        };
        let answer: Json = serde_json::from_str(&answer)
            .map_err(|e| format!("the BFCL bridge answered {answer:?}: {e}"))?;
        match answer["error"].as_str() {
            Some(error) => Err(format!("BFCL bridge: {error}")),
            None => Ok(answer),
        }
    }
}
