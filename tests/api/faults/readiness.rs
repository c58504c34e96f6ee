//! `/readyz` when the database goes away under a running server (issue 37): the SQLite file
//! deleted, PostgreSQL not answering. The only timing bound is a hang guard: `/readyz` must
//! answer 503 well before a client would give up (2.5 s, its checks are bounded by 1 s).

use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::support::backends::{run_on, Backend};

/// What a hung `/readyz` is: far above its 1 s bound, far below a client's patience.
const HANG: Duration = Duration::from_millis(2500);

#[tokio::test]
async fn readyz_fails_when_the_sqlite_file_is_deleted() {
    let app = TestApp::spawn().await;
    assert_eq!(app.get("/readyz", None).await.status(), 200);
    let file = app.db_url.trim_start_matches("sqlite://").to_string();
    std::fs::remove_file(&file).unwrap();
    let r = app.get("/readyz", None).await;
    assert_eq!(r.status(), 503);
    let body: Value = r.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("file was deleted"), "{body}");
    app.stop().await;
}

#[tokio::test]
async fn readyz_answers_503_at_once_when_postgres_does_not_answer() {
    run_on(Backend::Postgres, |url| async move {
        let proxy = Proxy::start().await;
        let through = url.replace("127.0.0.1:5432", &proxy.addr);
        let app = TestApp::spawn_on(&through).await;
        assert_eq!(app.get("/readyz", None).await.status(), 200);
        // The server stops answering: pooled connections and new ones alike.
        proxy.freeze.cancel();
        let started = Instant::now();
        let r = app
            .client
            .get(app.url("/readyz"))
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .unwrap();
        assert!(
            started.elapsed() < HANG,
            "/readyz hung {:?}",
            started.elapsed()
        );
        assert_eq!(r.status(), 503);
        let body: Value = r.json().await.unwrap();
        assert!(body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not answer"));
        // Let the app's connections fail so it can shut down.
        proxy.cut.cancel();
        app.stop().await;
    })
    .await;
}

/// A TCP proxy to the local PostgreSQL that can stop answering (`freeze`: bytes are no longer
/// passed on, new connections are accepted and never answered) and then drop every connection
/// (`cut`).
struct Proxy {
    addr: String,
    freeze: CancellationToken,
    cut: CancellationToken,
}

impl Proxy {
    async fn start() -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (freeze, cut) = (CancellationToken::new(), CancellationToken::new());
        let (f, c) = (freeze.clone(), cut.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(relay(client, f.clone(), c.clone()));
            }
        });
        Proxy { addr, freeze, cut }
    }
}

async fn relay(mut client: TcpStream, freeze: CancellationToken, cut: CancellationToken) {
    if !freeze.is_cancelled() {
        let Ok(mut server) = TcpStream::connect("127.0.0.1:5432").await else {
            return;
        };
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut client, &mut server) => return,
            _ = freeze.cancelled() => {}
        }
        // Frozen: both sockets stay open, nothing passes.
        cut.cancelled().await;
        drop(server);
    } else {
        cut.cancelled().await;
    }
    drop(client);
}
