//! The minimal relay: the token path's physical floor on this machine. Each client connection
//! gets one streamed completion from the upstream (the mock provider); every SSE frame read from
//! the upstream socket is written as one SSE frame to the client's socket, nothing else — no
//! run, no events log, no database. It runs as its own process (`reagent-loadgen relay`) so
//! that `/proc/<pid>/stat` charges it alone, exactly as it charges the server.
//!
//! The upstream side uses reqwest, the same client as the server's (h2c with `--llm-http2`); the downstream side is a
//! hand-written HTTP/1.1 response delimited by closing the connection (cheaper than any
//! framework, as a floor should be).

use anyhow::Context;
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

/// Serves until killed; prints `relay listening on http://<addr>` once bound.
pub async fn serve(upstream: String) -> anyhow::Result<bool> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    println!("relay listening on http://{}", listener.local_addr()?);
    let http = if crate::spawn::llm_http2() {
        reqwest::Client::builder().http2_prior_knowledge().build()?
    } else {
        crate::http_client()?
    };
    let body = serde_json::json!({
        "model": "mock-model", "stream": true,
        "messages": [{"role": "user", "content": "Write the answer."}],
    })
    .to_string();
    loop {
        let (sock, _) = listener.accept().await?;
        let req = http
            .post(&upstream)
            .header("content-type", "application/json")
            .body(body.clone());
        tokio::spawn(async move {
            if let Err(e) = relay_one(sock, req).await {
                eprintln!("relay: {e:#}");
            }
        });
    }
}

async fn relay_one(mut sock: TcpStream, req: reqwest::RequestBuilder) -> anyhow::Result<()> {
    sock.set_nodelay(true)?;
    // The request head only (the client sends no body); then the response head.
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 512];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = sock.read(&mut buf).await?;
        anyhow::ensure!(n > 0, "client closed before its request head");
        head.extend_from_slice(&buf[..n]);
    }
    let mut upstream = req.send().await?.error_for_status()?.bytes_stream();
    sock.write_all(HEAD).await?;
    let mut pending: Vec<u8> = Vec::new();
    while let Some(chunk) = upstream.next().await {
        pending.extend_from_slice(&chunk.context("upstream read")?);
        // One write per complete upstream frame, re-framed as an `answer` event.
        while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
            let frame = &pending[..end];
            let data = frame.strip_prefix(b"data: ").unwrap_or(frame);
            let mut out = Vec::with_capacity(data.len() + 24);
            out.extend_from_slice(b"event: answer\ndata: ");
            out.extend_from_slice(data);
            out.extend_from_slice(b"\n\n");
            sock.write_all(&out).await?;
            pending.drain(..end + 2);
        }
    }
    sock.shutdown().await?;
    Ok(())
}
