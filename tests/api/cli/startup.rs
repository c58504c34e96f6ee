//! The order of start-up: the port is bound before anything is created, and MCP servers that
//! are slow to start do not keep the listener down.

use std::time::{Duration, Instant};

use crate::mcp::python_server;
use crate::support::child::{run, Server};

#[tokio::test]
async fn a_port_in_use_fails_start_up_before_the_database_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    // The default database, ./data/reagent.db, relative to the child's working directory.
    let out = run(dir.path(), &["serve"], &[("REAGENT_BIND", addr.as_str())]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot listen on {addr} (REAGENT_BIND)")),
        "{stderr}"
    );
    assert!(
        !dir.path().join("data").exists(),
        "a failed start created the database folder"
    );
}

/// A stdio server that never answers `initialize` used to hold the listener down for the
/// 30 s connect timeout; now only `/readyz` waits, and only for a `required` server.
#[tokio::test]
async fn healthz_answers_at_once_while_an_mcp_server_never_answers_initialize() {
    let dir = tempfile::tempdir().unwrap();
    let silent = "env = { MCP_BAD_PEER_SILENT = \"1\" }";
    let config = format!(
        "{}{}",
        python_server("silent", "mcp_bad_peer.py", silent),
        python_server(
            "needed",
            "mcp_bad_peer.py",
            &format!("{silent}\nrequired = true")
        ),
    );
    std::fs::write(dir.path().join("config.toml"), config).unwrap();
    let started = Instant::now();
    let server = Server::serve(dir.path(), &[]).await;
    let health = reqwest::get(server.url("/healthz")).await.unwrap();
    assert_eq!(health.status(), 200);
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(10),
        "healthz answered after {waited:?}"
    );
    let ready = reqwest::get(server.url("/readyz")).await.unwrap();
    assert_eq!(ready.status(), 503);
    let body = ready.text().await.unwrap();
    assert!(
        body.contains("needed") && !body.contains("silent"),
        "{body}"
    );
    let status = server.get_json("/api/mcp").await;
    assert!(
        status
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["state"] == "connecting"),
        "{status}"
    );
    server.stop_and_log().await;
}
