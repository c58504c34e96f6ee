//! `Cluster`: several real `reagent` processes on one PostgreSQL database (docs/deployment.md), each its
//! own child [`Server`] in its own directory, named by `REAGENT_INSTANCE_ID` (`a`, `b`, `c`, …),
//! all calling one LLM. Tests start, follow, interrupt, kill and restart them by index.

use std::path::PathBuf;

use super::child::Server;

/// Instance names, in order.
pub const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];

pub struct Cluster {
    pub servers: Vec<Server>,
    db_url: String,
    llm: String,
    env: Vec<(String, String)>,
    dirs: Vec<tempfile::TempDir>,
}

impl Cluster {
    /// `n` instances on `db_url` (a fresh PostgreSQL database) calling the LLM at `llm`, each
    /// with `extra` in its environment.
    pub async fn start(n: usize, db_url: &str, llm: &str, extra: &[(&str, &str)]) -> Cluster {
        assert!(n <= NAMES.len());
        let mut cluster = Cluster {
            servers: Vec::new(),
            db_url: db_url.to_string(),
            llm: llm.to_string(),
            env: extra
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            dirs: Vec::new(),
        };
        for i in 0..n {
            cluster.dirs.push(tempfile::tempdir().unwrap());
            let server = cluster.spawn(i).await;
            cluster.servers.push(server);
        }
        cluster
    }

    /// The `i`th instance.
    pub fn at(&self, i: usize) -> &Server {
        &self.servers[i]
    }

    pub fn dir(&self, i: usize) -> PathBuf {
        self.dirs[i].path().to_path_buf()
    }

    /// Starts instance `i` again (after a kill) under the same name, on the same database.
    pub async fn restart(&mut self, i: usize) {
        let server = self.spawn(i).await;
        self.servers[i] = server;
    }

    async fn spawn(&self, i: usize) -> Server {
        let mut env: Vec<(&str, &str)> = vec![
            ("DATABASE_URL", &self.db_url),
            ("LLM_BASE_URL", &self.llm),
            ("LLM_API_KEY", "test"),
            ("LLM_MAX_RETRIES", "0"),
            ("RUST_LOG", "info"),
            ("REAGENT_INSTANCE_ID", NAMES[i]),
        ];
        env.extend(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        Server::serve(self.dirs[i].path(), &env).await
    }
}
