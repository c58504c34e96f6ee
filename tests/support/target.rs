//! `Target`: a local HTTP server (the test's axum routes on `<ip>:0`) that counts the requests
//! it received, so the network tools' tests can tell "refused before connecting" from "sent".

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::Router;

pub struct Target {
    pub addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

impl Target {
    /// Serves `routes` on `ip`, port 0, until the test ends.
    pub async fn serve(ip: &str, routes: Router) -> Target {
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        let app = routes.layer(middleware::from_fn(move |req: Request, next: Next| {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                next.run(req).await
            }
        }));
        let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Target { addr, hits }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Requests received so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}
