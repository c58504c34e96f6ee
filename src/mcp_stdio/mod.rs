//! `reagent mcp --url URL [--key-env NAME]` (docs/protocols.md): the `/mcp` server of a running
//! reagent over stdio, for desktop and IDE clients that launch their MCP servers as processes.
//!
//! A relay, not a second server: each newline-delimited JSON-RPC message read from stdin is
//! POSTed to `{url}/mcp`, and every message of the reply (one JSON body, or an event stream of
//! progress notifications then the result) is written to stdout, one per line, as it arrives.
//! Each message is relayed on its own task, so a long tool call holds up neither a ping nor its
//! own `notifications/cancelled`. Stdout carries the protocol only; logs go to stderr. A
//! reagent that cannot be reached is a JSON-RPC error reply per request, never an exit; EOF on
//! stdin is the client's shutdown (exit 0).
//!
//! Files: `relay` (one message over HTTP and its reply). Tested end to end with the MCP SDKs'
//! stdio clients in `tests/api/mcp_server/stdio.rs`.

mod relay;

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

pub use relay::Relay;

/// The flags of `reagent mcp`.
#[derive(Args, Debug)]
pub struct McpArgs {
    /// The running reagent service, e.g. http://127.0.0.1:8080 (`/mcp` is added unless the
    /// URL already ends with it).
    #[arg(long)]
    pub url: String,
    /// The environment variable that holds the bearer key, when the service has API keys.
    #[arg(long, default_value = "REAGENT_API_KEY")]
    pub key_env: String,
}

/// How long replies still in flight at EOF may take: a piped one-shot request
/// (`echo '{…"ping"…}' | reagent mcp …`) gets its quick reply, while a client that closes stdin
/// to shut down (the SDKs wait about 2 s before a signal) is not kept waiting on a long run.
const EOF_GRACE: Duration = Duration::from_secs(1);

/// Runs the bridge on the process's stdin and stdout until stdin ends.
pub async fn run(args: McpArgs) -> anyhow::Result<()> {
    let key = std::env::var(&args.key_env)
        .ok()
        .filter(|k| !k.trim().is_empty());
    if key.is_none() {
        tracing::info!(
            "{} is not set: calling {} without a key",
            args.key_env,
            args.url
        );
    }
    let relay = Relay::new(&args.url, key, &args.key_env)?;
    serve(relay, tokio::io::stdin(), tokio::io::stdout()).await?;
    Ok(())
}

/// Relays every line of `input` and writes the replies to `output` until `input` ends.
pub async fn serve<R, W>(relay: Relay, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(write_lines(rx, output));
    let relay = Arc::new(relay);
    let mut input = BufReader::new(input);
    let mut tasks = JoinSet::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line).await? == 0 {
            break;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        tasks.spawn(relay.clone().forward(line.clone(), tx.clone()));
        while tasks.try_join_next().is_some() {}
    }
    let drained = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(EOF_GRACE, drained).await.is_err() {
        tracing::info!("stdin closed: leaving the calls still in flight");
    }
    // Aborted calls drop their connections: the server cancels their runs.
    tasks.shutdown().await;
    relay.end_session().await;
    drop(tx);
    writer.await.unwrap_or(Ok(()))
}

/// Writes each message on its own line, flushed at once: the client reads line by line.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut rx: mpsc::UnboundedReceiver<String>,
    mut output: W,
) -> std::io::Result<()> {
    while let Some(message) = rx.recv().await {
        output.write_all(message.as_bytes()).await?;
        output.write_all(b"\n").await?;
        output.flush().await?;
    }
    Ok(())
}
