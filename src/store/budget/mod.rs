//! Budget windows, reservations and the usage ledger (docs/configuration.md `[[budgets]]`).
//!
//! A call reserves its worst case in each window of its tenant: the window rows are read locked
//! (`FOR UPDATE` on PostgreSQL; SQLite runs one writer at a time) and the reservation is taken
//! only if `spent + reserved + x <= limit` in each, so instances sharing a database never admit
//! more than the limit plus what calls in flight use beyond their reservations. The hold row
//! that goes with it is what settlement (or recovery, for a dead process's calls) releases,
//! exactly once: whoever deletes the hold gives its reservation back.
//!
//! Every write here is a [`Store::book`]: it records calls' usage, settles their holds,
//! releases a finished run's leftovers and takes a new reservation, so a run's ledger settles a
//! call with the reservation of its next one; and bookings of many runs queued at once share
//! one transaction (`batch.rs`: the group commit; `sql.rs`: its statements; `windows.rs`: the
//! check of each reservation in order against the windows' totals).

mod batch;
mod books;
mod report;
pub(in crate::store) mod sql;
#[cfg(test)]
mod tests;
mod windows;

use uuid::Uuid;

use super::{with_writer, Store, StoreError};

pub(crate) use batch::Bookings;
pub(crate) use books::book_in;
pub(in crate::store) use books::{delete_chunks, Books};

pub use report::{UsageGroup, UsageRow};

/// One window a call reserves in, with its limits (`None`: no limit of that kind).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowLimit {
    pub kind: &'static str,
    /// µs since the Unix epoch.
    pub starts_at: i64,
    pub tokens: Option<i64>,
    pub nanos: Option<i64>,
}

/// A reservation that was granted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    pub id: Uuid,
    pub tenant: String,
    /// The windows reserved in: (kind, starts_at).
    pub windows: Vec<(String, i64)>,
    pub tokens: i64,
    pub nanos: i64,
}

/// What a call used, to record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallUsage {
    pub tenant: String,
    pub run_id: Uuid,
    pub model: String,
    pub agent: String,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    pub cost_nanos: i64,
    pub unpriced: bool,
    /// The provider reported no usage: the counts are reagent's estimate.
    pub estimated: bool,
}

/// A finished call to settle: its hold (if it reserved), what it used, and when it ended (µs;
/// the usage ledger's time, whenever the settlement is written).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settlement {
    pub hold: Option<Hold>,
    pub usage: CallUsage,
    pub at: i64,
}

/// A reservation asked for, with the hold it becomes if granted.
#[derive(Debug)]
pub(in crate::store) struct Asked {
    pub run_id: Uuid,
    pub limits: Vec<WindowLimit>,
    pub hold: Hold,
}

/// A reservation to take: `tokens` and `nanos` in each of `windows`, for a call of `run_id`.
#[derive(Clone, Copy, Debug)]
pub struct Reservation<'a> {
    pub tenant: &'a str,
    pub run_id: Uuid,
    pub windows: &'a [WindowLimit],
    pub tokens: i64,
    pub nanos: i64,
}

/// What a [`Store::book`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Booked {
    /// The reservation asked for, if it was granted.
    pub hold: Option<Hold>,
    /// The totals of every window written, after the booking.
    pub totals: Vec<WindowSpend>,
    /// Holds of the finished run released (calls cut short).
    pub released: u64,
}

/// A window's totals after a settlement.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct WindowSpend {
    pub window_kind: String,
    pub starts_at: i64,
    pub spent_tokens: i64,
    pub spent_nanos: i64,
    pub reserved_tokens: i64,
    pub reserved_nanos: i64,
    pub warned: i64,
}

impl Store {
    /// Reserves `tokens` and `nanos` in every window of `windows` for a call of `run_id`, or
    /// nothing (`None`) when one of them cannot take it.
    pub async fn reserve_budget(
        &self,
        tenant: &str,
        run_id: Uuid,
        windows: &[WindowLimit],
        tokens: i64,
        nanos: i64,
    ) -> Result<Option<Hold>, StoreError> {
        let r = Reservation {
            tenant,
            run_id,
            windows,
            tokens,
            nanos,
        };
        Ok(self.book(&[], Some(r), None).await?.hold)
    }

    /// Settles a call: its hold (if still there) is given back, what it used is added to its
    /// windows and recorded in the usage ledger. Returns the windows' totals after it.
    pub async fn settle_budget(
        &self,
        hold: Option<&Hold>,
        usage: &CallUsage,
    ) -> Result<Vec<WindowSpend>, StoreError> {
        let s = Settlement {
            hold: hold.cloned(),
            usage: usage.clone(),
            at: chrono::Utc::now().timestamp_micros(),
        };
        Ok(self.book(&[s], None, None).await?.totals)
    }

    /// Gives back every reservation `run_id` still holds (its calls were cut short, or its
    /// process died and the run is recovered). Returns how many were released.
    pub async fn release_budget_holds(&self, run_id: Uuid) -> Result<u64, StoreError> {
        Ok(self.book(&[], None, Some(run_id)).await?.released)
    }

    /// In one transaction: records and settles `settle` (a settlement whose hold is gone
    /// already only adds its spend), with `end_of` releases every other hold of that run, and
    /// takes `reserve`. A reservation that does not fit changes nothing of its own
    /// (`hold: None`); the rest is written all the same. On an error nothing is written. The
    /// transaction is shared with the bookings of other runs queued meanwhile (`batch.rs`).
    pub async fn book(
        &self,
        settle: &[Settlement],
        reserve: Option<Reservation<'_>>,
        end_of: Option<Uuid>,
    ) -> Result<Booked, StoreError> {
        if settle.is_empty() && reserve.is_none() && end_of.is_none() {
            return Ok(Booked::default());
        }
        let reserve = reserve.map(|r| Asked {
            run_id: r.run_id,
            limits: r.windows.to_vec(),
            hold: Hold {
                id: Uuid::new_v4(),
                tenant: r.tenant.to_string(),
                windows: r
                    .windows
                    .iter()
                    .map(|w| (w.kind.into(), w.starts_at))
                    .collect(),
                tokens: r.tokens,
                nanos: r.nanos,
            },
        });
        self.book_grouped(settle.to_vec(), reserve, end_of).await
    }

    /// Marks the window warned; true for the one caller that did (it logs the warning).
    pub async fn mark_budget_warned(
        &self,
        tenant: &str,
        kind: &str,
        starts_at: i64,
    ) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let n = with_writer!(self, |pool| {
            sqlx::query(
                "UPDATE budget_windows SET warned = 1 \
                 WHERE tenant = $1 AND window_kind = $2 AND starts_at = $3 AND warned = 0",
            )
            .bind(tenant)
            .bind(kind)
            .bind(starts_at)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(n == 1)
    }
}
