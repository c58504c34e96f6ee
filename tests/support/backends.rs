//! A fresh database per scenario on either backend: a temp SQLite file, or a PostgreSQL
//! database `reagent_test_<random>` created on [`PG_ADMIN_URL`] and dropped afterwards
//! (`WITH (FORCE)`, from the admin connection, even when the scenario panics). When
//! PostgreSQL is unreachable the PostgreSQL tests FAIL unless `REAGENT_SKIP_PG=1` is set.
//!
//! [`on_both_backends!`] turns `async fn(db_url: String)` scenarios (or scenarios of another
//! runner taking a [`Backend`]) into one test per backend, in modules `sqlite` and `postgres`
//! beside them.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use tokio::sync::Semaphore;

/// One `#[tokio::test]` per scenario and backend, in modules `sqlite` and `postgres` of the
/// invoking module; each scenario is an `async fn(String)` given its database URL. An optional
/// leading `#[tokio::test(...)]` attribute replaces the default one (e.g. a multi-threaded
/// runtime for races).
///
/// `via RUNNER;` runs the scenarios with `RUNNER(backend, scenario)` instead of [`run_on`]
/// (e.g. a runner handing each scenario a connected store); each scenario then names its own
/// test attribute, so one file's scenarios can differ in runtime.
macro_rules! on_both_backends {
    (via $run:path; $(#[$test:meta] $scenario:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[$test]
                async fn $scenario() {
                    $run($crate::support::backends::Backend::Sqlite, super::$scenario).await;
                }
            )*
        }
        mod postgres {
            $(
                #[$test]
                async fn $scenario() {
                    $run($crate::support::backends::Backend::Postgres, super::$scenario).await;
                }
            )*
        }
    };
    (#[$test:meta] $($scenario:ident),* $(,)?) => {
        on_both_backends!(via $crate::support::backends::run_on; $(#[$test] $scenario),*);
    };
    ($($scenario:ident),* $(,)?) => {
        on_both_backends!(#[tokio::test] $($scenario),*);
    };
}

/// Where the scenarios keep their data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The maintenance database the PostgreSQL tests create and drop their databases from.
pub const PG_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// One scenario's fresh database; [`Db::destroy`] removes it.
pub struct Db {
    pub url: String,
    pg: Option<(sqlx::PgPool, String)>,
    _dir: Option<tempfile::TempDir>,
}

impl Db {
    /// A fresh database, or `None` when PostgreSQL is skipped with `REAGENT_SKIP_PG=1`.
    pub async fn create(backend: Backend) -> Option<Db> {
        match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().unwrap();
                let url = format!("sqlite://{}", dir.path().join("reagent.db").display());
                Some(Db {
                    url,
                    pg: None,
                    _dir: Some(dir),
                })
            }
            Backend::Postgres => {
                if std::env::var("REAGENT_SKIP_PG").as_deref() == Ok("1") {
                    eprintln!("REAGENT_SKIP_PG=1: skipping a PostgreSQL test");
                    return None;
                }
                let admin = sqlx::PgPool::connect(PG_ADMIN_URL)
                    .await
                    .unwrap_or_else(|e| {
                        panic!(
                            "PostgreSQL unreachable at {PG_ADMIN_URL} ({e}); \
                             set REAGENT_SKIP_PG=1 to skip"
                        )
                    });
                let name = format!("reagent_test_{}", uuid::Uuid::new_v4().simple());
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                    .execute(&admin)
                    .await
                    .unwrap();
                Some(Db {
                    url: format!("postgres://postgres@127.0.0.1:5432/{name}"),
                    pg: Some((admin, name)),
                    _dir: None,
                })
            }
        }
    }

    /// Drops the PostgreSQL database (closing the app's leftover connections) or the temp dir.
    pub async fn destroy(self) -> Result<(), sqlx::Error> {
        if let Some((admin, name)) = self.pg {
            let dropped = sqlx::query(sqlx::AssertSqlSafe(format!(
                "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
            )))
            .execute(&admin)
            .await;
            admin.close().await;
            dropped?;
        }
        Ok(())
    }
}

/// PostgreSQL scenarios running at once. Each app's pool may open up to 10 connections, so on a
/// many-core CI machine unbounded test threads could exceed the server's `max_connections`.
static PG_SLOTS: Semaphore = Semaphore::const_new(4);

/// Runs `scenario` on a fresh database of `backend` (its URL is the argument) and removes the
/// database afterwards, even when the scenario panics.
pub async fn run_on<F, Fut>(backend: Backend, scenario: F)
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = ()>,
{
    super::log::init();
    let _slot = match backend {
        Backend::Postgres => Some(PG_SLOTS.acquire().await.unwrap()),
        Backend::Sqlite => None,
    };
    let Some(db) = Db::create(backend).await else {
        return;
    };
    let outcome = AssertUnwindSafe(scenario(db.url.clone()))
        .catch_unwind()
        .await;
    let dropped = db.destroy().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    dropped.unwrap();
}
