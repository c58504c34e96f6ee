//! The lease settings and counters: held by the run manager, used by the lease task
//! (`lease.rs`), so both import them from here.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// `REAGENT_LEASE_TTL_S` and `REAGENT_LEASE_RENEW_S`.
#[derive(Clone, Copy, Debug)]
pub struct LeaseTimes {
    pub ttl: Duration,
    pub renew: Duration,
}

impl Default for LeaseTimes {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(20),
            renew: Duration::from_secs(5),
        }
    }
}

/// Counters for `/metrics`.
#[derive(Debug, Default)]
pub struct LeaseStats {
    pub(super) takeovers: AtomicU64,
    pub(super) renewal_failures: AtomicU64,
}

/// What `/metrics` shows about leases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeaseCounts {
    /// Runs this instance executes (each under its lease).
    pub owned: u64,
    pub takeovers: u64,
    pub fenced_writes: u64,
    pub renewal_failures: u64,
}
