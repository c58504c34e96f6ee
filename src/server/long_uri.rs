//! [`LongUri`]: a request whose request line alone does not fit the connection's read buffer
//! gets `414 URI Too Long` with the API's JSON error body, instead of hyper's bare 431.
//!
//! Each connection's read buffer stays capped at 8 KB (`listen::http1`): a larger cap lets
//! hyper grow every connection's buffer, and SSE streams keep theirs for a whole run. hyper
//! answers any head that does not fit with 431; this wrapper notes whether a line end has been
//! read since the last response began, and when hyper then writes its 431, the request line
//! itself was what did not fit, so the answer is replaced by a 414.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The status lines hyper uses for a head that does not fit its buffer.
const TOO_LARGE: [&[u8]; 2] = [b"HTTP/1.1 431 ", b"HTTP/1.0 431 "];

const BODY: &str = r#"{"error":{"code":"uri_too_long","message":"the request line is longer than 8 KB: send long inputs in a request body"}}"#;

/// Wraps a connection's IO (see the module documentation).
pub struct LongUri<T> {
    inner: T,
    /// No `\n` read since the last response began: the current request line is still open.
    line_open: bool,
    /// Once a 431 was replaced: our response and how much of it is written. Later writes of
    /// hyper's are dropped (hyper closes the connection after an error response).
    reply: Option<(Vec<u8>, usize)>,
}

impl<T> LongUri<T> {
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            line_open: true,
            reply: None,
        }
    }
}

fn uri_too_long() -> Vec<u8> {
    format!(
        "HTTP/1.1 414 URI Too Long\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{BODY}",
        BODY.len()
    )
    .into_bytes()
}

impl<T: AsyncWrite + Unpin> LongUri<T> {
    /// Whether hyper's write `first` (its first buffer) is to be replaced by a 414.
    fn replaces(&mut self, first: &[u8]) -> bool {
        if self.reply.is_none() {
            if self.line_open && TOO_LARGE.iter().any(|p| first.starts_with(p)) {
                self.reply = Some((uri_too_long(), 0));
            } else {
                // A response begins or goes on: what is read next starts a new request.
                self.line_open = true;
            }
        }
        self.reply.is_some()
    }

    /// Writes what is left of our reply; ready (claiming hyper's `len` bytes) once it is all out.
    fn write_reply(&mut self, cx: &mut Context<'_>, len: usize) -> Poll<io::Result<usize>> {
        let Some((reply, written)) = self.reply.as_mut() else {
            return Poll::Ready(Ok(len));
        };
        while *written < reply.len() {
            let n = match Pin::new(&mut self.inner).poll_write(cx, &reply[*written..]) {
                Poll::Ready(Ok(n)) => n,
                other => return other,
            };
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        Poll::Ready(Ok(len))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for LongUri<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if self.line_open && buf.filled()[before..].contains(&b'\n') {
            self.line_open = false;
        }
        result
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for LongUri<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.replaces(buf) {
            return self.write_reply(cx, buf.len());
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| b);
        if self.replaces(first) {
            let len = bufs.iter().map(|b| b.len()).sum();
            return self.write_reply(cx, len);
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
