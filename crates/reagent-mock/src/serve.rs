//! The mock's accept loop: HTTP/1.1 and h2c (prior knowledge) on one port, so the load
//! generator can measure `LLM_HTTP2` against the same mock. `axum::serve` would also speak
//! h2c, but with hyper's default of 200 concurrent streams per connection, and a client that
//! multiplexes every run over one connection would queue the 201st held run behind the others.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

/// The listen backlog, as the server's: a burst of load-generator connections is not refused.
const LISTEN_BACKLOG: u32 = 4096;

/// A listener on `addr` with [`LISTEN_BACKLOG`] (and `SO_REUSEADDR`, as tokio's `bind`).
pub(super) fn listen(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Streams one h2 connection may carry: more than any load the mock is used for.
const MAX_STREAMS: u32 = 1 << 20;

/// Serves `app` until `shutdown`, then stops accepting and lets in-flight responses finish.
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let mut http = auto::Builder::new(TokioExecutor::new());
    http.http2().max_concurrent_streams(MAX_STREAMS);
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    // Out of file descriptors or a reset before accept: keep serving.
                    tracing::warn!(error = %e, "mock provider: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Small stream chunks must not wait for delayed ACKs (Nagle).
        let _ = tcp.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let conn = http.serve_connection(TokioIo::new(tcp), service);
        let conn = graceful.watch(conn.into_owned());
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "mock provider: connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
