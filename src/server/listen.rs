//! Accepting and serving connections: a deep accept queue, `TCP_NODELAY`, a header-read
//! timeout (which also closes idle keep-alive connections), half-closed clients served to the
//! end, 414 for request lines longer than the read buffer, and a connection cap below the file-descriptor limit so that a flood of silent clients
//! cannot starve everyone else (docs/api.md; RELIABILITY.md).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, Request, Response};
use axum::response::IntoResponse;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt;

use super::error::ApiError;
use super::long_uri::LongUri;
use super::stall::StallGuard;

pub use crate::net::{listen, LISTEN_BACKLOG};

/// Connections past the cap that still get an answer (`/healthz`, or 503) before the server
/// starts closing new ones unanswered.
const OVERFLOW: usize = 32;

/// How long an over-cap connection may take to send its one request.
const OVERFLOW_HEADER_TIMEOUT: Duration = Duration::from_secs(2);

/// What one client connection may hold, and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Time to receive a whole request head, counted from when the server starts waiting for
    /// one: at connect, and after each response on a keep-alive connection — so it is also
    /// the idle timeout of keep-alive connections. A streaming response is never cut by it.
    pub header_timeout: Duration,
    /// Open connections served normally; past it, new connections get `/healthz` or a 503.
    pub max_connections: usize,
    /// A connection whose client has not taken what we send for this long is closed (an SSE
    /// subscriber that stopped reading; it can resume with `Last-Event-ID`).
    pub stall_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self::new(30, None, 60)
    }
}

impl ConnectionLimits {
    /// `max_connections: None` derives the cap from the process's file-descriptor limit.
    pub fn new(header_timeout_s: u64, max_connections: Option<usize>, stall_s: u64) -> Self {
        Self {
            header_timeout: Duration::from_secs(header_timeout_s.max(1)),
            max_connections: max_connections.unwrap_or_else(default_max_connections),
            stall_timeout: Duration::from_secs(stall_s.max(1)),
        }
    }
}

/// The soft file limit less a reserve for the database pool, tool clients, MCP servers and
/// the over-cap answers.
fn default_max_connections() -> usize {
    let soft = nofile_limit().unwrap_or(1024);
    let reserve = 64 + soft / 16 + OVERFLOW;
    soft.saturating_sub(reserve).max(16)
}

#[cfg(unix)]
#[allow(unsafe_code)] // getrlimit: libc, no safe wrapper in our dependencies.
fn nofile_limit() -> Option<usize> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct we pass.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
    (ok && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur as usize)
}

#[cfg(not(unix))]
fn nofile_limit() -> Option<usize> {
    None
}

/// [`serve_with`] and the default [`ConnectionLimits`].
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, router, ConnectionLimits::default(), shutdown).await
}

/// Serves `router` on `listener` until `shutdown` completes, then stops accepting connections
/// and waits for in-flight requests (graceful shutdown). Callers that need a deadline race
/// this future against a timer.
pub async fn serve_with(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // The route table resolved once; each connection clones an `Arc` (`axum::serve` given a
    // `Router` rebuilds it per connection, and an SSE stream holds it for the whole run).
    let router = router.with_state(());
    let http = http1(limits.header_timeout);
    let mut overflow_http = http1(OVERFLOW_HEADER_TIMEOUT);
    overflow_http.keep_alive(false);
    let open = Arc::new(AtomicUsize::new(0));
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was accepted:
                    // keep serving (as axum::serve does), pausing if the process is at a limit.
                    tracing::warn!(error = %e, "accept failed");
                    if !is_connection_error(&e) {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let guard = OpenConnection::new(&open);
        if guard.count > limits.max_connections + OVERFLOW {
            tracing::debug!("connection closed unanswered: over the connection cap");
            continue;
        }
        // Without TCP_NODELAY, Nagle's algorithm holds each small SSE frame until the previous
        // one is acknowledged, and the peer delays that ACK by up to 40 ms.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        if guard.count > limits.max_connections {
            let io = io(tcp, OVERFLOW_HEADER_TIMEOUT);
            spawn_overflow(&overflow_http, io, router.clone(), guard);
            continue;
        }
        let io = io(tcp, limits.stall_timeout);
        let conn = http.serve_connection(io, TowerToHyperService::new(router.clone()));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _guard = guard;
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    // Stop reading new requests on every connection; in-flight responses (SSE streams
    // included) run to their end.
    graceful.shutdown().await;
    Ok(())
}

type Io = TokioIo<StallGuard<LongUri<TcpStream>>>;

fn io(tcp: TcpStream, stall: Duration) -> Io {
    TokioIo::new(StallGuard::new(LongUri::new(tcp), stall))
}

fn http1(header_timeout: Duration) -> hyper::server::conn::http1::Builder {
    let mut http = hyper::server::conn::http1::Builder::new();
    // hyper grows a connection's read buffer from 8 KB to 16 KB when it reads more while
    // unread bytes remain; capped at its minimum (still a whole request head) it reuses the
    // buffer instead, and every SSE stream keeps its connection's buffer for the whole run.
    http.max_buf_size(8192)
        // A client that shut down its sending side (`socat`, some proxies and scripts) is
        // still reading: serve its response instead of closing on the read EOF.
        .half_close(true)
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    http
}

/// One request on a connection past the cap: `/healthz` answers as usual (monitors must not
/// see a healthy but busy server as down), anything else gets 503 and the connection closes.
fn spawn_overflow(
    http: &hyper::server::conn::http1::Builder,
    io: Io,
    router: Router,
    guard: OpenConnection,
) {
    let service = tower::service_fn(move |req: Request<Incoming>| {
        let router = router.clone();
        async move {
            if req.uri().path() == "/healthz" {
                router.oneshot(req).await
            } else {
                Ok(over_capacity())
            }
        }
    });
    let conn = http.serve_connection(io, TowerToHyperService::new(service));
    tokio::spawn(async move {
        let _guard = guard;
        let _ = tokio::time::timeout(OVERFLOW_HEADER_TIMEOUT * 2, conn).await;
    });
}

fn over_capacity() -> Response<Body> {
    let mut response =
        ApiError::Unavailable("the server has too many open connections; retry in a moment".into())
            .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// Counts a connection as open for as long as it lives.
struct OpenConnection {
    open: Arc<AtomicUsize>,
    /// Open connections including this one, when it was accepted.
    count: usize,
}

impl OpenConnection {
    fn new(open: &Arc<AtomicUsize>) -> Self {
        let count = open.fetch_add(1, Ordering::Relaxed) + 1;
        Self {
            open: open.clone(),
            count,
        }
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }
}

fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    )
}

#[cfg(test)]
mod tests;
