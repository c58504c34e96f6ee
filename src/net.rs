//! The one way this crate opens a listening socket, shared by the server and the test fakes
//! (the mock provider takes thousands of pooled connections at once, like the server); the
//! redirect policy of the client that calls operator-declared endpoints; and the capped
//! reading of error bodies.

use tokio::net::TcpListener;

/// The accept queue asked of the kernel (which caps it at `net.core.somaxconn`). tokio's
/// `TcpListener::bind` asks for 1024, which overflowed when thousands of clients connected at
/// once: the kernel dropped their SYNs and they retried after 1 s and 3 s.
pub const LISTEN_BACKLOG: u32 = 4096;

/// A listener on `addr` with [`LISTEN_BACKLOG`] (and `SO_REUSEADDR`, as tokio's `bind`).
pub fn listen(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
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

/// Redirect hops followed within one origin by [`same_origin_redirects`].
pub const MAX_REDIRECTS: usize = 10;

/// Redirects for the clients of operator-declared endpoints (providers, `[[tools.http]]`, `[[mcp]]` over
/// HTTP, webhook hooks): followed within the configured URL's origin, refused to any other.
/// Those requests carry the operator's configured headers (API keys), and reqwest strips only
/// `Authorization` and cookies when a redirect changes the origin; an endpoint that moved is
/// reconfigured, never followed with its credentials to wherever it points.
pub fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let target = attempt.url().origin();
        let same = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == target);
        if !same {
            let to = target.ascii_serialization();
            attempt.error(format!(
                "refused a redirect to another origin ({to}): configured headers are never \
                 sent to another origin; configure the new URL instead"
            ))
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("stopped after {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// Bytes of an error body read (a provider's, an HTTP tool's, an MCP server's): enough for
/// any message; the rest is never downloaded.
pub const MAX_ERROR_BODY_BYTES: usize = 8 * 1024;

/// At most `max` bytes of a response's body, read chunk by chunk; the rest is left unread and
/// the connection closes with the response, so a huge or endless error body costs neither
/// memory nor time. A read that fails keeps what arrived.
pub async fn read_prefix(mut response: reqwest::Response, max: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < max {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = max - body.len();
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Ok(None) | Err(_) => break,
        }
    }
    body
}
