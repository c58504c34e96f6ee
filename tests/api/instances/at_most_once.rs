//! At most once for a tool that is not idempotent (issue 37, item 3): the calling instance is
//! killed (kill -9) or paused (SIGSTOP) at the very moment its call reaches the tool — before
//! the writer's next tick could have stored the checkpoint listing the call as in flight — and
//! the instance that goes on with the run (another one taking it over on PostgreSQL, the
//! restarted one on SQLite) answers the call `[interrupted …]` instead of calling the tool
//! again. A paused instance woken after the takeover makes no call for the run either (its
//! durable in-flight record is refused by the lease fence) and writes nothing more for it.
//!
//! Ten rounds each; the tool ([`Fuse`]) counts every call of every round.

use reagent::agent::checkpoint::INTERRUPTED_TOOL;
use reagent::store::Store;
use uuid::Uuid;

use super::{finished, replay, taken_over, LEASE_ENV};
use crate::support::backends::{run_on, Backend};
use crate::support::child::Server;
use crate::support::cluster::{Cluster, NAMES};
use crate::support::fuse::{fuse_mock, Fuse};
use crate::support::lookup::tool_end_after_resumed;

const ROUNDS: usize = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_kill_9_as_the_call_starts_never_repeats_it() {
    run_on(Backend::Postgres, |db_url| async move {
        let (fuse, _config, mut cluster) = start(&db_url, 3).await;
        let store = Store::connect(&db_url).await.unwrap();
        for round in 0..ROUNDS {
            let owner = round % 3;
            let run = start_armed(&fuse, &cluster, round, owner, "-KILL").await;
            cluster.servers[owner].wait().await;
            let (taker, _) = taken_over(&store, run, NAMES[owner]).await;
            finished(&store, run).await;
            let taker_at = NAMES.iter().position(|n| *n == taker).unwrap();
            check_round(&fuse, round, cluster.at(taker_at), run).await;
            cluster.restart(owner).await;
        }
        store.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_sigstop_as_the_call_starts_never_repeats_it() {
    run_on(Backend::Postgres, |db_url| async move {
        let (fuse, _config, cluster) = start(&db_url, 3).await;
        let store = Store::connect(&db_url).await.unwrap();
        for round in 0..ROUNDS {
            let owner = round % 3;
            let run = start_armed(&fuse, &cluster, round, owner, "-STOP").await;
            let (taker, _) = taken_over(&store, run, NAMES[owner]).await;
            finished(&store, run).await;
            let taker_at = NAMES.iter().position(|n| *n == taker).unwrap();
            check_round(&fuse, round, cluster.at(taker_at), run).await;
            let stored = store.list_events(run, 0).await.unwrap();
            // Woken after the takeover: it learns it lost the run, makes no call for it and
            // writes nothing for it.
            cluster.at(owner).signal("-CONT");
            let id = run.to_string();
            crate::support::eventually("the woken owner lets go of the run", || async {
                let log = cluster.at(owner).log();
                log.lines().any(|l| {
                    l.contains(&id) && (l.contains("fenced") || l.contains("run stopped here"))
                })
            })
            .await;
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            assert_eq!(
                fuse.round(round),
                [(0, 1), (1, 1)],
                "round {round}: each call once"
            );
            assert_eq!(
                store.list_events(run, 0).await.unwrap(),
                stored,
                "round {round}"
            );
        }
        store.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_kill_9_as_the_call_starts_never_repeats_it_after_restart() {
    run_on(Backend::Sqlite, |db_url| async move {
        let (fuse, _config, mut cluster) = start(&db_url, 1).await;
        let store = Store::connect(&db_url).await.unwrap();
        for round in 0..ROUNDS {
            let run = start_armed(&fuse, &cluster, round, 0, "-KILL").await;
            cluster.servers[0].wait().await;
            cluster.restart(0).await;
            finished(&store, run).await;
            check_round(&fuse, round, cluster.at(0), run).await;
        }
        store.close().await;
    })
    .await;
}

/// The tool, its configuration file (kept for the instances' restarts) and `n` instances
/// calling it through a mock model that calls it twice per run.
async fn start(db_url: &str, n: usize) -> (Fuse, tempfile::NamedTempFile, Cluster) {
    let fuse = Fuse::serve().await;
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), fuse.config()).unwrap();
    // Leaked for the test's life: the instances call it until they are dropped.
    let mock = Box::leak(Box::new(fuse_mock().await));
    let path = config.path().to_str().unwrap().to_string();
    let mut env: Vec<(&str, &str)> = LEASE_ENV.to_vec();
    env.extend([
        ("REAGENT_HTTP_ALLOW_PRIVATE", "true"),
        ("REAGENT_CONFIG", path.as_str()),
    ]);
    let cluster = Cluster::start(n, db_url, &mock.base_url(), &env).await;
    (fuse, config, cluster)
}

/// Arms the tool to send `signal` to instance `owner` as round `round`'s first call arrives,
/// starts a run there and waits until the signal was sent.
async fn start_armed(
    fuse: &Fuse,
    cluster: &Cluster,
    round: usize,
    owner: usize,
    signal: &'static str,
) -> Uuid {
    let server = cluster.at(owner);
    fuse.arm(round, signal, server.child.id().unwrap());
    let (_, run) = server.start_run("charge the card").await;
    fuse.fired().await;
    Uuid::parse_str(&run).unwrap()
}

/// The run completed; its first call was made once and answered as interrupted after
/// `resumed`, its second made once by the instance that went on.
async fn check_round(fuse: &Fuse, round: usize, server: &Server, run: Uuid) {
    let replay = replay(server, run).await;
    let done = replay.last().unwrap();
    assert_eq!(
        done.data["status"], "completed",
        "round {round}: {:?}",
        done.data
    );
    let end = tool_end_after_resumed(&replay);
    assert_eq!(
        end.data["observation"], INTERRUPTED_TOOL,
        "round {round}: {:?}",
        end.data
    );
    assert_eq!(
        fuse.round(round),
        [(0, 1), (1, 1)],
        "round {round}: each call once"
    );
}
