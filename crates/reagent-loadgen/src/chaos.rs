//! Chaos over several instances (docs/deployment.md): a killer that SIGKILLs a random spawned instance
//! every N seconds and restarts it under the same name, a load spread over the instances
//! meanwhile (`run --spawn-instances N [--chaos-kill-every S]`), and `chaos-smoke`, its bounded
//! CI form: zero broken streams, zero lost accepted interrupts, the database consistent.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::check;
use crate::fleet::{Fleet, Leases};
use crate::load::{self, Load, LoadReport};
use crate::pgdb::{self, PgDb, PG_ADMIN_URL};
use crate::spawn::MockFlags;

/// What the killer did: (seconds since it started, instance, restart outcome).
pub type KillLog = Vec<(f64, &'static str, Result<Duration, String>)>;

pub struct Killer {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<KillLog>,
}

impl Killer {
    /// Every `every`: kill -9 of a random instance, `down` later its restart.
    pub fn start(
        fleet: Arc<Mutex<Fleet>>,
        http: reqwest::Client,
        every: Duration,
        down: Duration,
        seed: u64,
    ) -> Killer {
        let stop = CancellationToken::new();
        let token = stop.clone();
        let task = tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut log = KillLog::new();
            let mut last: Option<usize> = None;
            let t0 = Instant::now();
            loop {
                tokio::select! {
                    () = tokio::time::sleep(every) => {}
                    () = token.cancelled() => break,
                }
                let mut f = fleet.lock().await;
                // Never the same instance twice in a row, so that every one gets killed.
                let i = match last {
                    Some(l) if f.len() > 1 => (l + rng.random_range(1..f.len())) % f.len(),
                    _ => rng.random_range(0..f.len()),
                };
                last = Some(i);
                let at = t0.elapsed().as_secs_f64();
                let name = f.name(i);
                if let Err(e) = f.kill9(i).await {
                    log.push((at, name, Err(format!("kill: {e:#}"))));
                    continue;
                }
                tokio::time::sleep(down).await;
                let t = Instant::now();
                let restarted = f.restart(&http, i).await.map(|()| t.elapsed());
                log.push((at, name, restarted.map_err(|e| format!("{e:#}"))));
            }
            log
        });
        Killer { stop, task }
    }

    pub async fn stop(self) -> KillLog {
        self.stop.cancel();
        self.task.await.unwrap_or_default()
    }
}

pub fn print_kills(log: &KillLog) {
    for (at, name, r) in log {
        match r {
            Ok(d) => println!(
                "  [{at:>5.1} s] kill -9 {name}, restarted, ready after {:.2} s",
                d.as_secs_f64()
            ),
            Err(e) => println!("  [{at:>5.1} s] kill -9 {name}: {e}"),
        }
    }
}

/// One load over a spawned fleet, with a killer when `kill_every` is set; the report, the
/// kills, and the violations of the process and database checks afterwards.
pub async fn load_with_chaos(
    http: &reqwest::Client,
    fleet: Fleet,
    db_url: &str,
    load: &Load,
    kill_every: Option<Duration>,
) -> anyhow::Result<(LoadReport, KillLog, Vec<String>)> {
    let targets = fleet.targets.clone();
    let names: Vec<String> = (0..fleet.len())
        .map(|i| format!("{}={}", fleet.name(i), fleet.url(i)))
        .collect();
    println!("instances: {}", names.join(" "));
    let load = Load {
        targets: Some(targets.clone()),
        ..load.clone()
    };
    let fleet = Arc::new(Mutex::new(fleet));
    let down = kill_every.map(|e| (e / 4).min(Duration::from_secs(2)));
    let killer = kill_every
        .zip(down)
        .map(|(every, down)| Killer::start(fleet.clone(), http.clone(), every, down, load.seed));
    let load_http = crate::http_client()?;
    let report = load::run(&load_http, &targets.urls[0], None, &load).await;
    drop(load_http);
    let kills = match killer {
        Some(k) => k.stop().await,
        None => KillLog::new(),
    };
    let mut errs: Vec<String> = report.error_samples.clone();
    if report.errors > errs.len() {
        errs.push(format!("{} runs with errors in all", report.errors));
    }
    let idle = targets.urls.iter().map(|url| async move {
        let (_, e) = check::quiesced(http, url, f64::NAN, Duration::from_secs(15)).await;
        e.into_iter().map(move |e| format!("{url}: {e}"))
    });
    errs.extend(futures::future::join_all(idle).await.into_iter().flatten());
    let fleet = Arc::try_unwrap(fleet)
        .map_err(|_| anyhow::anyhow!("the killer still holds the fleet"))?
        .into_inner();
    if !errs.is_empty() {
        for i in 0..fleet.len() {
            for l in fleet.log_problems(i, 5) {
                println!("  log {}: {l}", fleet.name(i));
            }
        }
    }
    errs.extend(fleet.stop().await);
    let db = pgdb::consistency(db_url).await?;
    println!(
        "database: {} runs, {} events, {} interrupts stored ({} accepted by the client)",
        db.runs, db.events, db.interrupts, report.interrupts_accepted
    );
    let kept = report.interrupts_accepted - report.interrupts_moved;
    if (db.interrupts as usize) < kept {
        errs.push(format!(
            "database holds {} interrupts, {kept} accepted ones were not moved to a next run",
            db.interrupts
        ));
    }
    errs.extend(db.errors.into_iter().map(|e| format!("database: {e}")));
    Ok((report, kills, errs))
}

/// The CI form: 3 debug instances on a fresh database, short leases (TTL 3 s, renewal 1 s), a
/// kill -9 every 5 s (plus the restart: one instance down at a time) during 84 conversations
/// (4 tool iterations at 300 ms, 20 tokens at 50/s: ~2 s each, ~30 s in all) with interrupts
/// and cancels through random instances.
pub async fn chaos_smoke() -> anyhow::Result<bool> {
    let http = crate::http_client()?;
    let t0 = Instant::now();
    let db = PgDb::create(PG_ADMIN_URL).await?;
    let result = chaos_smoke_on(&http, &db.url).await;
    db.drop().await?;
    let errs = result?;
    for e in &errs {
        println!("ERROR {e}");
    }
    println!(
        "chaos-smoke: {} in {:.0} s",
        if errs.is_empty() { "OK" } else { "FAILED" },
        t0.elapsed().as_secs_f64()
    );
    Ok(errs.is_empty())
}

async fn chaos_smoke_on(http: &reqwest::Client, db_url: &str) -> anyhow::Result<Vec<String>> {
    let flags = MockFlags {
        latency_ms: 300,
        tokens_per_s: 50.0,
        answer_tokens: 20,
        tool_iterations: 4,
        stamp_tokens: true,
        ..MockFlags::default()
    };
    let leases = Leases {
        ttl_s: Some(3),
        renew_s: Some(1),
    };
    let extra = [("REAGENT_SHUTDOWN_GRACE_S", "5".to_string())];
    let fleet = Fleet::start(http, 3, db_url, &flags, leases, &extra).await?;
    let load = Load {
        conversations: 84,
        concurrency: 6,
        mode: "mixed".into(),
        interrupt_rate: 0.4,
        cancel_rate: 0.2,
        timeout: Duration::from_secs(45),
        ..Load::default()
    };
    let every = Duration::from_secs(5);
    let (r, kills, errs) = load_with_chaos(http, fleet, db_url, &load, Some(every)).await?;
    r.print("chaos-smoke: 84 conversations over 3 instances, 6 at once, a kill -9 every 5 s");
    print_kills(&kills);
    let mut errs = errs;
    if kills.len() < 2 {
        errs.push(format!(
            "{} kills during the load: too few to prove anything",
            kills.len()
        ));
    }
    errs.extend(kills.iter().filter_map(|(at, name, r)| {
        r.as_ref()
            .err()
            .map(|e| format!("restart of {name} at {at:.1} s: {e}"))
    }));
    Ok(errs)
}
