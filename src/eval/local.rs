//! The service inside the eval's own process (`reagent eval --config`): the configuration's
//! models, tools, MCP servers and agents, served on a loopback port to the same client as a
//! running service, with a throw-away SQLite database, no API keys, and the eval's sampling
//! settings laid over every model's and every agent's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::app::{setup, App, AppOverrides};
use crate::config::{Config, ConfigError, DEFAULT_CONFIG_FILE};
use crate::domain::Sampling;

/// The configuration `serve` would load (`REAGENT_CONFIG`, else `config.toml`, then the
/// environment), or the file `path` then the environment.
pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
    let mut env: HashMap<String, String> = std::env::vars().collect();
    if let Some(p) = path {
        env.insert("REAGENT_CONFIG".into(), p.display().to_string());
    }
    let config = Config::load_with(&env, Path::new(DEFAULT_CONFIG_FILE))?;
    setup::check(&config)?;
    Ok(config)
}

/// `sampling`'s settings where set, over every model's and every agent's own. The agents'
/// reach the runs through `Sampled::wrap` (src/llm/sampling.rs), the models' through their
/// clients, so a run with or without `--agent` samples the same way.
pub fn fix_sampling(config: &mut Config, sampling: Sampling) {
    for m in &mut config.models {
        let s = sampling.over(m.sampling());
        (m.temperature, m.top_p, m.seed) = (s.temperature, s.top_p, s.seed);
    }
    for a in &mut config.agents {
        a.sampling = sampling.over(a.sampling);
    }
}

/// The running in-process service.
pub struct Local {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    stop: oneshot::Sender<()>,
    served: JoinHandle<std::io::Result<()>>,
    dir: PathBuf,
}

impl Local {
    /// Builds the service from `config` (waiting for its MCP servers' first connection, so
    /// their tools are there for the first task) and serves it on a free loopback port.
    pub async fn start(mut config: Config) -> anyhow::Result<Local> {
        let dir = std::env::temp_dir().join(format!("reagent-eval-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        config.server.database_url = format!("sqlite://{}", dir.join("eval.db").display());
        config.server.data_dir = dir.join("data");
        config.auth.keys.clear();
        let listener = crate::net::listen(([127, 0, 0, 1], 0).into())
            .context("cannot listen on a loopback port")?;
        let base = format!("http://{}", listener.local_addr()?);
        let app = App::build(config, AppOverrides::default())
            .await
            .context("cannot start the service")?;
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn(async move {
            app.run_until_stopped(listener, async {
                let _ = stopped.await;
            })
            .await
        });
        Ok(Local {
            base,
            stop,
            served,
            dir,
        })
    }

    /// Stops the service and removes its database.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        match self.served.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("the in-process service stopped with: {e}"),
            Err(e) => tracing::warn!("the in-process service panicked: {e}"),
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
