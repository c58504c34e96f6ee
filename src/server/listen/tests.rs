use std::net::SocketAddr;
use std::time::Duration;

use axum::routing::get;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::*;

/// The accept queue the kernel gave the socket: `ss` shows it as the Send-Q of a
/// listening socket.
fn backlog_of(port: u16) -> u32 {
    let out = std::process::Command::new("ss")
        .args(["-Hltn", &format!("sport = :{port}")])
        .output()
        .expect("`ss` (iproute2) is needed to read a listener's backlog");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next().expect("the listener is listed");
    line.split_whitespace()
        .nth(2)
        .and_then(|q| q.parse().ok())
        .unwrap_or_else(|| panic!("unexpected `ss` line: {line}"))
}

#[tokio::test]
async fn listeners_ask_for_a_deep_accept_queue() {
    let somaxconn: u32 = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(4096);
    let ours = listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = ours.local_addr().unwrap().port();
    assert_eq!(backlog_of(port), LISTEN_BACKLOG.min(somaxconn));
    // What tokio's own bind gives (1024), for contrast: the queue that overflowed.
    if somaxconn > 1024 {
        let default = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = default.local_addr().unwrap().port();
        assert!(backlog_of(port) < LISTEN_BACKLOG.min(somaxconn));
    }
}

/// A server with `/healthz`, a slow answer and a slow stream, under `limits`.
async fn start(limits: ConnectionLimits) -> SocketAddr {
    let router = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                "slow answer"
            }),
        )
        .route(
            "/stream",
            get(|| async {
                let chunks = futures::stream::unfold(0u32, |i| async move {
                    if i == 5 {
                        return None;
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    Some((
                        Ok::<_, std::convert::Infallible>(format!("chunk{i};")),
                        i + 1,
                    ))
                });
                Body::from_stream(chunks)
            }),
        );
    let listener = listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_with(listener, router, limits, std::future::pending()));
    addr
}

fn limits(header_timeout_s: u64, max_connections: usize) -> ConnectionLimits {
    ConnectionLimits::new(header_timeout_s, Some(max_connections), 60)
}

fn get_request(path: &str, close: bool) -> String {
    let connection = if close { "close" } else { "keep-alive" };
    format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: {connection}\r\n\r\n")
}

/// Reads until the server closes the connection; panics if it has not within `within`.
async fn read_to_close(tcp: &mut TcpStream, within: Duration) -> String {
    let mut out = Vec::new();
    tokio::time::timeout(within, tcp.read_to_end(&mut out))
        .await
        .expect("the server closes the connection")
        .ok();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_disconnected() {
    let addr = start(limits(1, 100)).await;
    let mut slow = TcpStream::connect(addr).await.unwrap();
    // A slowloris client: a few header bytes, then a byte now and then, never the blank line.
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n")
        .await
        .unwrap();
    let dribble = async {
        loop {
            tokio::time::sleep(Duration::from_millis(300)).await;
            if slow.write_all(b"X").await.is_err() {
                break;
            }
        }
    };
    let closed = tokio::time::timeout(Duration::from_secs(10), dribble).await;
    assert!(closed.is_ok(), "the slow client was never disconnected");
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_header_timeout() {
    let addr = start(limits(1, 100)).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(get_request("/healthz", false).as_bytes())
        .await
        .unwrap();
    let answer = read_to_close(&mut tcp, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("ok"), "{answer}");
}

#[tokio::test]
async fn a_streaming_response_outlives_the_header_timeout() {
    let addr = start(limits(1, 100)).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(get_request("/stream", true).as_bytes())
        .await
        .unwrap();
    let answer = read_to_close(&mut tcp, Duration::from_secs(20)).await;
    for i in 0..5 {
        assert!(answer.contains(&format!("chunk{i};")), "{answer}");
    }
}

#[tokio::test]
async fn a_half_closed_client_still_gets_its_response() {
    let addr = start(limits(5, 100)).await;
    for path in ["/slow", "/stream"] {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(get_request(path, false).as_bytes())
            .await
            .unwrap();
        tcp.shutdown().await.unwrap();
        let answer = read_to_close(&mut tcp, Duration::from_secs(20)).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{path}: {answer:?}");
        let last = if path == "/slow" {
            "slow answer"
        } else {
            "chunk4;"
        };
        assert!(answer.contains(last), "{path}: {answer:?}");
    }
}

#[tokio::test]
async fn past_the_connection_cap_healthz_answers_and_the_rest_gets_503() {
    let addr = start(limits(30, 4)).await;
    let mut silent = Vec::new();
    for _ in 0..4 {
        silent.push(TcpStream::connect(addr).await.unwrap());
    }
    // The accept loop counts connections as it accepts them: wait until all four are in.
    let busy = eventually_answer(addr, "/slow").await;
    assert!(busy.starts_with("HTTP/1.1 503"), "{busy}");
    assert!(busy.contains("\"code\":\"unavailable\""), "{busy}");
    assert!(
        busy.to_ascii_lowercase().contains("retry-after: 1"),
        "{busy}"
    );
    // Still over the cap: monitors keep seeing a live server.
    let health = answer(addr, "/healthz").await;
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    assert!(health.ends_with("ok"), "{health}");
    // Once the silent clients go, requests are served normally again.
    drop(silent);
    let mut served = String::new();
    for _ in 0..100 {
        served = answer(addr, "/slow").await;
        if served.starts_with("HTTP/1.1 200") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(served.ends_with("slow answer"), "{served}");
}

/// One request on a new connection, read to the end.
async fn answer(addr: SocketAddr, path: &str) -> String {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(get_request(path, true).as_bytes())
        .await
        .unwrap();
    read_to_close(&mut tcp, Duration::from_secs(10)).await
}

/// [`answer`], retried until it is a 503 (the server counts connections as it accepts them).
async fn eventually_answer(addr: SocketAddr, path: &str) -> String {
    let mut last = String::new();
    for _ in 0..100 {
        last = answer(addr, path).await;
        if last.starts_with("HTTP/1.1 503") {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    last
}

/// Ends (drops) a response body: sets the flag.
struct DropFlag(Arc<std::sync::atomic::AtomicBool>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_client_that_stops_reading_is_disconnected_after_the_stall_timeout() {
    let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = dropped.clone();
    // An endless response, as an SSE stream of a long run would be for a client that never reads.
    let router = Router::new().route(
        "/flood",
        get(move || {
            let guard = DropFlag(flag.clone());
            async move {
                let chunks = futures::stream::repeat_with(move || {
                    let _ = &guard;
                    Ok::<_, std::convert::Infallible>(vec![b'x'; 64 * 1024])
                });
                Body::from_stream(chunks)
            }
        }),
    );
    let listener = listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let limits = ConnectionLimits::new(30, Some(100), 1);
    tokio::spawn(serve_with(listener, router, limits, std::future::pending()));
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(get_request("/flood", false).as_bytes())
        .await
        .unwrap();
    // Never read. The server must give up on the connection and drop the response.
    let mut waited = Duration::ZERO;
    while !dropped.load(std::sync::atomic::Ordering::SeqCst) {
        assert!(
            waited < Duration::from_secs(20),
            "the stalled response was never dropped"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        waited += Duration::from_millis(100);
    }
    drop(tcp);
}
