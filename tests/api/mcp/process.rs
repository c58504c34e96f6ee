//! The real binary with a stdio server started through a shell (so the server is a
//! grandchild, as with `npx`): after SIGTERM no process of the server is left (checked in
//! /proc), and an expanded `${VAR}` secret appears in no log line, in `/api/mcp` or in
//! `check-config`.

use std::path::Path;

use crate::support::child::{self, Server};
use crate::support::peers;

const SECRET: &str = "s3cr3t-value-4f1b9c";

fn config(dir: &Path, log: &Path) -> String {
    // `; true` keeps sh from exec-ing Python: the server is sh's child, reagent's grandchild;
    // the background `sleep` ignores stdin closing, like a helper an `npx` server leaves behind.
    let shell = format!(
        "sleep 600 & echo \"linger pid $!\" >> {:?}; {:?} {:?}; true",
        log.display().to_string(),
        peers::python().display().to_string(),
        peers::dir().join("mcp_peer.py").display().to_string()
    );
    format!(
        "[server]\ndatabase_url = \"sqlite://{}/r.db\"\n\n[[mcp]]\nname = \"peer\"\ncommand = \"/bin/sh\"\nargs = [\"-c\", {shell:?}]\n\
         env = {{ MCP_PEER_LOG = {:?}, MCP_PEER_SECRET = \"${{PEER_SECRET}}\" }}\n",
        dir.display(),
        log.display().to_string()
    )
}

/// The pid written after `prefix` in the peer's log.
fn pid_after(log: &Path, prefix: &str) -> Option<u32> {
    let text = std::fs::read_to_string(log).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(prefix)?.trim().parse().ok())
}

/// A live (not zombie) process with this pid.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

#[tokio::test]
async fn no_server_process_survives_shutdown_and_no_secret_is_logged() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("peer.log");
    std::fs::write(dir.path().join("config.toml"), config(dir.path(), &log)).unwrap();
    let env = [("RUST_LOG", "debug"), ("PEER_SECRET", SECRET)];
    let mut server = Server::serve(dir.path(), &env).await;
    let status = crate::support::eventually("peer ready", || async {
        let s = server.get_json("/api/mcp").await;
        if s[0]["state"] == "ready" {
            Ok(s)
        } else {
            Err(s.to_string())
        }
    })
    .await;
    assert!(!status.to_string().contains(SECRET));
    let pid = pid_after(&log, "start pid ").expect("the peer wrote its pid");
    let linger = pid_after(&log, "linger pid ").expect("the shell wrote the sleep's pid");
    assert!(alive(pid) && alive(linger));

    let checked = child::run(dir.path(), &["check-config"], &env).await;
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    assert!(checked.status.success(), "{printed}");
    assert!(printed.contains("peer"), "{printed}");
    assert!(!printed.contains(SECRET), "{printed}");

    server.signal("-TERM");
    let exit = server.wait().await;
    assert!(exit.success(), "{exit:?}");
    crate::support::eventually("the peer is gone", || async { !alive(pid) }).await;
    crate::support::eventually("the lingering sleep is gone", || async { !alive(linger) }).await;
    let text = server.stop_and_log().await;
    assert!(text.contains("MCP server ready"), "{text}");
    assert!(!text.contains(SECRET), "the secret is in the log");
}

#[tokio::test]
async fn an_unset_variable_is_a_start_up_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("peer.log");
    std::fs::write(dir.path().join("config.toml"), config(dir.path(), &log)).unwrap();
    let out = child::run(dir.path(), &["check-config"], &[]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("PEER_SECRET") && err.contains("mcp[0].env.MCP_PEER_SECRET"),
        "{err}"
    );
}
