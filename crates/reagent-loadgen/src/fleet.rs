//! Several spawned `reagent serve` instances on one PostgreSQL database (docs/deployment.md), all calling
//! one spawned mock, each in its own directory (its `serve.log`) on a port it keeps across
//! restarts, named `a`, `b`, `c`… by `REAGENT_INSTANCE_ID` (a restart keeps the name).

use std::sync::Arc;
use std::time::Duration;

use crate::spawn::SCRIPTED;
use crate::spawn::{free_port, Mock, MockFlags, Server, ServerSpec};
use crate::targets::Targets;

/// Instance names, in order.
pub const NAMES: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];

/// Lease settings passed to the instances (docs/deployment.md, whole seconds as the server reads them);
/// `None` leaves the server's default.
#[derive(Clone, Copy, Debug, Default)]
pub struct Leases {
    pub ttl_s: Option<u64>,
    pub renew_s: Option<u64>,
}

pub struct Fleet {
    pub mock: Mock,
    specs: Vec<ServerSpec>,
    ports: Vec<u16>,
    /// `None` while an instance is down (killed and not yet restarted).
    pub servers: Vec<Option<Server>>,
    pub targets: Arc<Targets>,
}

impl Fleet {
    /// `n` instances on `db_url`, one after the other (the first applies the migrations).
    pub async fn start(
        http: &reqwest::Client,
        n: usize,
        db_url: &str,
        flags: &MockFlags,
        leases: Leases,
        extra: &[(&str, String)],
    ) -> anyhow::Result<Fleet> {
        anyhow::ensure!(
            (1..=NAMES.len()).contains(&n),
            "1 to {} instances",
            NAMES.len()
        );
        let mock = Mock::start(flags).await?;
        let mut fleet = Fleet {
            mock,
            specs: Vec::new(),
            ports: Vec::new(),
            servers: Vec::new(),
            targets: Arc::new(Targets::default()),
        };
        for name in &NAMES[..n] {
            let mut env: Vec<(&str, String)> =
                SCRIPTED.iter().map(|(k, v)| (*k, v.to_string())).collect();
            env.push(("DATABASE_URL", db_url.to_string()));
            env.push(("REAGENT_INSTANCE_ID", name.to_string()));
            if let Some(ttl) = leases.ttl_s {
                env.push(("REAGENT_LEASE_TTL_S", ttl.to_string()));
            }
            if let Some(renew) = leases.renew_s {
                env.push(("REAGENT_LEASE_RENEW_S", renew.to_string()));
            }
            env.extend(extra.iter().cloned());
            let spec = ServerSpec::new(&fleet.mock.base_url, &env)?;
            let port = free_port()?;
            let server = spec.start_at(http, port).await?;
            fleet.specs.push(spec);
            fleet.ports.push(port);
            fleet.servers.push(Some(server));
        }
        let urls = fleet
            .ports
            .iter()
            .map(|p| format!("http://127.0.0.1:{p}"))
            .collect();
        fleet.targets = Arc::new(Targets::new(urls));
        Ok(fleet)
    }

    pub fn len(&self) -> usize {
        self.ports.len()
    }

    pub fn url(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}", self.ports[i])
    }

    pub fn name(&self, i: usize) -> &'static str {
        NAMES[i]
    }

    /// SIGKILL of instance `i` (counted as a possible takeover first, so that a client that
    /// finishes meanwhile already allows for it).
    pub async fn kill9(&mut self, i: usize) -> anyhow::Result<()> {
        self.targets.note_kill(&self.url(i));
        if let Some(mut server) = self.servers[i].take() {
            server.child.kill().await?;
        }
        Ok(())
    }

    /// Starts instance `i` again under its name, on its port and database.
    pub async fn restart(&mut self, http: &reqwest::Client, i: usize) -> anyhow::Result<()> {
        let server = self.specs[i].start_at(http, self.ports[i]).await?;
        self.servers[i] = Some(server);
        Ok(())
    }

    /// The last `lines` lines of instance `i`'s log holding `WARN` or `ERROR`.
    pub fn log_problems(&self, i: usize, lines: usize) -> Vec<String> {
        let log =
            std::fs::read_to_string(self.specs[i].dir.path().join("serve.log")).unwrap_or_default();
        let bad: Vec<String> = log
            .lines()
            .filter(|l| l.contains("WARN") || l.contains("ERROR"))
            .map(str::to_string)
            .collect();
        bad[bad.len().saturating_sub(lines)..].to_vec()
    }

    /// SIGTERM to every running instance at once (each hands over or finishes); the violations.
    pub async fn stop(mut self) -> Vec<String> {
        let mut errs = Vec::new();
        let stops: Vec<_> = self
            .servers
            .iter_mut()
            .enumerate()
            .filter_map(|(i, s)| s.take().map(|s| (i, s)))
            .map(|(i, s)| async move { (i, s.stop(Duration::from_secs(30)).await) })
            .collect();
        for (i, r) in futures::future::join_all(stops).await {
            match r {
                Ok(status) if status.success() => {}
                Ok(status) => errs.push(format!(
                    "instance {} exited with {status} on SIGTERM",
                    NAMES[i]
                )),
                Err(e) => errs.push(format!("instance {}: {e:#}", NAMES[i])),
            }
        }
        errs
    }
}
