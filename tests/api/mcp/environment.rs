//! What of reagent's environment a stdio server sees: the real binary, started with provider
//! and API keys and a database URL in its environment, and two of our peers that write their
//! whole environment to a file at start: one with the default minimal environment, one with
//! `inherit_env = true`.

use std::path::Path;

use serde_json::Value;

use crate::support::child::Server;
use crate::support::peers;

/// Variables of reagent's that no third-party server may see by default.
const SECRETS: [(&str, &str); 4] = [
    ("LLM_API_KEY", "sk-leak-llm-7c1d"),
    ("REAGENT_API_KEYS", "tester:leak-api-key-93ab"),
    ("OPENAI_API_KEY", "sk-leak-openai-5e2f"),
    ("DATABASE_URL", ""),
];

fn server(name: &str, dump: &Path, extra: &str) -> String {
    format!(
        "[[mcp]]\nname = \"{name}\"\ncommand = {:?}\nargs = [{:?}]\n\
         env = {{ MCP_PEER_ENV_DUMP = {:?}, PEER_TOKEN = \"configured\" }}\n{extra}\n",
        peers::python().display().to_string(),
        peers::dir().join("mcp_peer.py").display().to_string(),
        dump.display().to_string(),
    )
}

async fn dumped(path: &Path) -> serde_json::Map<String, Value> {
    crate::support::eventually(&format!("{} written", path.display()), || async {
        let text = std::fs::read_to_string(path).ok()?;
        serde_json::from_str::<Value>(&text)
            .ok()?
            .as_object()
            .cloned()
    })
    .await
}

#[tokio::test]
async fn a_stdio_server_gets_a_minimal_environment_unless_it_inherits() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, open) = (dir.path().join("plain.json"), dir.path().join("open.json"));
    let db = format!("sqlite://{}/r.db", dir.path().display());
    let toml = format!(
        "[server]\ndatabase_url = {db:?}\n\n{}{}",
        server("plain", &plain, ""),
        server("open", &open, "inherit_env = true"),
    );
    std::fs::write(dir.path().join("config.toml"), toml).unwrap();
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let mut env: Vec<(&str, &str)> = SECRETS
        .iter()
        .map(|(k, v)| {
            (
                *k,
                if *k == "DATABASE_URL" {
                    db.as_str()
                } else {
                    *v
                },
            )
        })
        .collect();
    env.extend([("PATH", path.as_str()), ("HOME", "/home/reagent-test")]);
    let mut server = Server::serve(dir.path(), &env).await;

    let seen = dumped(&plain).await;
    for (key, _) in SECRETS {
        assert!(
            !seen.contains_key(key),
            "{key} reached the server: {seen:?}"
        );
    }
    assert!(!format!("{seen:?}").contains("leak"), "{seen:?}");
    assert_eq!(seen["PEER_TOKEN"], "configured", "{seen:?}");
    assert_eq!(seen["PATH"], path.as_str(), "{seen:?}");
    assert_eq!(seen["HOME"], "/home/reagent-test", "{seen:?}");

    let inherited = dumped(&open).await;
    for (key, value) in &env {
        assert_eq!(inherited[*key], *value, "{key}: {inherited:?}");
    }
    assert_eq!(inherited["PEER_TOKEN"], "configured", "{inherited:?}");
    server.signal("-TERM");
    assert!(server.wait().await.success());
}
