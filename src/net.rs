//! The one way this crate opens a listening socket, shared by the server and the test fakes
//! (the mock provider takes thousands of pooled connections at once, like the server).

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
