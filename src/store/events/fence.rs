//! Which runs' lease epochs the shared writer checks in a transaction (fencing, docs/deployment.md).
//!
//! On SQLite, a run whose epoch the writer found unchanged is not checked again while
//! `lease_changes.n` (bumped by a trigger on every epoch change, migration
//! `20261203000000_lease_changes`) stays where it was: SQLite runs one write transaction at a
//! time, so an unchanged count read inside the writer's transaction proves that no epoch
//! changed since the check. PostgreSQL checks, and locks, every run in every transaction.

use std::collections::HashSet;

use uuid::Uuid;

/// Most runs remembered as verified; past it the set starts over (each run is checked again
/// once), so runs that ended without a final write cannot grow it without bound.
const MAX_VERIFIED: usize = 100_000;

/// The runs whose epochs were verified, and the `lease_changes.n` they were verified under.
#[derive(Debug, Default)]
pub(crate) struct Verified {
    changes: i64,
    runs: HashSet<Uuid>,
}

impl Verified {
    /// Forgets every verified run if the count read in this transaction is not the one they
    /// were verified under.
    pub fn observe(&mut self, changes: i64) {
        if changes != self.changes {
            self.runs.clear();
            self.changes = changes;
        }
    }

    /// Whether `run`'s epoch was verified under the count last observed.
    pub fn holds(&self, run: &Uuid) -> bool {
        self.runs.contains(run)
    }

    /// After a commit under count `changes`: `checked` were found with their own epoch, `ended`
    /// will not be written again.
    pub fn record(&mut self, changes: i64, checked: &[Uuid], ended: &[Uuid]) {
        if changes != self.changes {
            return;
        }
        if self.runs.len() + checked.len() > MAX_VERIFIED {
            self.runs.clear();
        }
        self.runs.extend(checked.iter().copied());
        for run in ended {
            self.runs.remove(run);
        }
    }
}
