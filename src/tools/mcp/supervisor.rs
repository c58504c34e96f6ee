//! The supervisor of one MCP server: connects, lists the tools, then waits for the session
//! to end (restart or reconnect with backoff 1 s doubling to 60 s), for
//! `notifications/tools/list_changed` (a fresh list; a failed one ends the session so no
//! stale tool is served), for a call that found the connection broken, or for shutdown (the
//! stdio process group is killed).

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use super::server::{Listing, Server, State, CONNECT_TIMEOUT};
use super::session::{self, Session};

const BACKOFF_START: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// How long a closing session may take before its process group is killed.
const CLOSE_GRACE: Duration = Duration::from_secs(3);

impl Server {
    /// The supervisor: runs until `shutdown`.
    pub async fn supervise(self: Arc<Self>, http: reqwest::Client, shutdown: CancellationToken) {
        let mut backoff = BACKOFF_START;
        let mut first = true;
        loop {
            self.set(
                if first {
                    State::Connecting
                } else {
                    State::Restarting
                },
                None,
                None,
                None,
            );
            first = false;
            let attempt = tokio::time::timeout(CONNECT_TIMEOUT, self.open(&http));
            let opened = tokio::select! {
                r = attempt => r.unwrap_or_else(|_| Err(format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()))),
                () = shutdown.cancelled() => return self.set(State::Failed, Some("shut down".into()), Some(Listing::empty()), None),
            };
            match opened {
                Ok(session) => {
                    backoff = BACKOFF_START;
                    let ended = self.serve(session, &shutdown).await;
                    if shutdown.is_cancelled() {
                        return;
                    }
                    tracing::warn!(server = %self.cfg.name, error = %ended, "MCP server session ended; reconnecting");
                    self.set(State::Failed, Some(ended), None, None);
                }
                Err(e) => {
                    tracing::warn!(server = %self.cfg.name, error = %e, retry_in_s = backoff.as_secs(), "MCP server unavailable");
                    self.set(State::Failed, Some(e), None, None);
                }
            }
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                () = shutdown.cancelled() => return,
            }
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    async fn open(&self, http: &reqwest::Client) -> Result<Session, String> {
        let session = session::connect(&self.cfg, http, self.list_changed.clone()).await?;
        let peer = session.running.peer().clone();
        match session::list_tools(&peer, CONNECT_TIMEOUT).await {
            Ok(listed) => {
                let listing = self.entries(listed);
                tracing::info!(server = %self.cfg.name, tools = listing.tools.len(), skipped = listing.skipped.len(), "MCP server ready");
                self.set(State::Ready, None, Some(listing), Some(peer));
                Ok(session)
            }
            Err(e) => {
                close(session).await;
                Err(format!("tools/list failed: {e}"))
            }
        }
    }

    /// Serves a ready session until it ends; returns why.
    async fn serve(&self, session: Session, shutdown: &CancellationToken) -> String {
        let Session { running, pgid } = session;
        let peer = running.peer().clone();
        let token = running.cancellation_token();
        let mut waiting = Box::pin(running.waiting());
        // A break reported against the previous session must not end this one.
        let _ = self.broken.notified().now_or_never();
        loop {
            tokio::select! {
                r = &mut waiting => {
                    session::kill_group(pgid);
                    return match r {
                        Ok(reason) => format!("the MCP server went away ({reason:?})"),
                        Err(e) => format!("the MCP session task failed: {e}"),
                    };
                }
                () = self.list_changed.notified() => {
                    if peer.is_transport_closed() {
                        continue;
                    }
                    match session::list_tools(&peer, CONNECT_TIMEOUT).await {
                        Ok(listed) => {
                            let listing = self.entries(listed);
                            tracing::info!(server = %self.cfg.name, tools = listing.tools.len(), skipped = listing.skipped.len(), "MCP tool list refreshed");
                            self.set(State::Ready, None, Some(listing), Some(peer.clone()));
                        }
                        Err(e) => {
                            token.cancel();
                            let _ = tokio::time::timeout(CLOSE_GRACE, &mut waiting).await;
                            session::kill_group(pgid);
                            return format!("refreshing the tool list failed: {e}");
                        }
                    }
                }
                () = self.broken.notified() => {
                    token.cancel();
                    let _ = tokio::time::timeout(CLOSE_GRACE, &mut waiting).await;
                    session::kill_group(pgid);
                    return "the connection to the MCP server broke".into();
                }
                () = shutdown.cancelled() => {
                    token.cancel();
                    let _ = tokio::time::timeout(CLOSE_GRACE, &mut waiting).await;
                    session::kill_group(pgid);
                    self.set(State::Failed, Some("shut down".into()), None, None);
                    return "shut down".into();
                }
            }
        }
    }
}

async fn close(session: Session) {
    let Session { mut running, pgid } = session;
    let _ = running.close_with_timeout(CLOSE_GRACE).await;
    session::kill_group(pgid);
}
