//! The stdio transport: the server's process (in its own process group, with the minimal
//! environment of `session`), its stdout read line by line through [`frame`]'s checks by a
//! task of its own, and rmcp's line transport over what that task lets through. The read is
//! bounded ([`MAX_MESSAGE_BYTES`] a line, the excess dropped as it arrives), so a 50 MB
//! answer costs neither memory nor a timeout: its request gets an error at once.

use std::process::Stdio;

use process_wrap::tokio::{ChildWrapper, CommandWrap, ProcessGroup};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use rmcp::RoleClient;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::process::{ChildStderr, ChildStdin};

use super::frame::{self, IdScanner, Verdict, MAX_MESSAGE_BYTES};

/// Bytes in flight between the checking task and rmcp.
const PIPE_BYTES: usize = 64 * 1024;
/// A line buffer grown past this is given back after its line.
const KEEP_BUFFER_BYTES: usize = 1024 * 1024;

/// rmcp's line transport over the checked output, owning the child (killed when dropped).
pub struct ChildTransport {
    inner: AsyncRwTransport<RoleClient, DuplexStream, ChildStdin>,
    child: Box<dyn ChildWrapper>,
}

impl Drop for ChildTransport {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Starts `cmd` in its own process group: the transport, the group id and the stderr pipe.
pub fn spawn(
    server: &str,
    cmd: tokio::process::Command,
) -> std::io::Result<(ChildTransport, Option<i32>, Option<ChildStderr>)> {
    let mut wrapped = CommandWrap::from(cmd);
    wrapped.wrap(ProcessGroup::leader());
    wrapped
        .command_mut()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = wrapped.spawn()?;
    let pgid = child.id().and_then(|p| i32::try_from(p).ok());
    let missing = || std::io::Error::other("the child's pipes were not set up");
    let stdin = child.stdin().take().ok_or_else(missing)?;
    let stdout = child.stdout().take().ok_or_else(missing)?;
    let stderr = child.stderr().take();
    let (checked, ours) = tokio::io::duplex(PIPE_BYTES);
    tokio::spawn(check_lines(server.to_string(), stdout, ours));
    // Our lines are at most MAX_MESSAGE_BYTES; rmcp's own cap must not cut them again.
    let inner =
        AsyncRwTransport::new_client(checked, stdin).with_max_line_length(MAX_MESSAGE_BYTES + 64);
    Ok((ChildTransport { inner, child }, pgid, stderr))
}

/// One line read, or why there is none.
enum Read {
    Line,
    TooLarge(IdScanner),
    End,
}

/// Copies the server's output to `out` line by line, as [`frame::inspect`] decides, until
/// either side closes.
async fn check_lines(
    server: String,
    stdout: impl AsyncRead + Unpin,
    mut out: impl AsyncWrite + Unpin,
) {
    let mut reader = BufReader::with_capacity(PIPE_BYTES, stdout);
    let mut line = Vec::new();
    loop {
        let verdict = match read_line(&mut reader, &mut line).await {
            Read::End => return,
            Read::Line if trim(&line).is_empty() => continue,
            Read::Line => frame::inspect(trim(&line)),
            Read::TooLarge(scanner) => frame::too_large(&scanner),
        };
        let written = match verdict {
            Verdict::Pass => write_line(&mut out, trim(&line)).await,
            Verdict::Replace(other) => {
                tracing::warn!(server = %server, "{}", describe(&other));
                write_line(&mut out, &other).await
            }
            Verdict::Drop(why) => {
                tracing::warn!(server = %server, "ignored {why}");
                Ok(())
            }
        };
        if line.capacity() > KEEP_BUFFER_BYTES {
            line = Vec::new();
        }
        if written.is_err() {
            return;
        }
    }
}

/// The error message of a replacement, for the log.
fn describe(replacement: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(replacement)
        .ok()
        .and_then(|v| v.pointer("/error/message")?.as_str().map(String::from))
        .unwrap_or_else(|| "an MCP tool list had tools nested too deep".into())
}

fn trim(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

async fn write_line(out: &mut (impl AsyncWrite + Unpin), line: &[u8]) -> std::io::Result<()> {
    out.write_all(line).await?;
    out.write_all(b"\n").await?;
    out.flush().await
}

/// Reads one line into `line` (cleared first), never holding more than [`MAX_MESSAGE_BYTES`]:
/// past that the rest of the line is dropped as it arrives, scanned for its id.
async fn read_line(reader: &mut (impl AsyncBufReadExt + Unpin), line: &mut Vec<u8>) -> Read {
    line.clear();
    let mut scanner: Option<IdScanner> = None;
    loop {
        let (consumed, done) = {
            let Ok(available) = reader.fill_buf().await else {
                return Read::End;
            };
            if available.is_empty() {
                return Read::End;
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            match scanner.as_mut() {
                Some(s) => s.feed(&available[..take]),
                None if line.len() + take > MAX_MESSAGE_BYTES => {
                    let mut s = IdScanner::default();
                    s.feed(line);
                    s.feed(&available[..take]);
                    line.clear();
                    scanner = Some(s);
                }
                None => line.extend_from_slice(&available[..take]),
            }
            (take, newline.is_some())
        };
        reader.consume(consumed);
        if done {
            return match scanner {
                Some(s) => Read::TooLarge(s),
                None => Read::Line,
            };
        }
    }
}
