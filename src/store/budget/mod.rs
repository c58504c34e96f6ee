//! Budget windows, reservations and the usage ledger (docs/configuration.md `[[budgets]]`).
//!
//! A call reserves its worst case in each window of its tenant with ONE conditional upsert per
//! window (`spent + reserved + x <= limit`), which PostgreSQL re-checks on the latest row
//! version after waiting for a concurrent writer's lock, and SQLite runs one writer at a time:
//! instances sharing a database never admit more than the limit plus the reservations in flight.
//! The hold row that goes with it is what settlement (or recovery, for a dead process's calls)
//! releases, exactly once: whoever deletes the hold gives its reservation back.
//!
//! Every write here is a [`Store::book`]: one transaction that records calls' usage, settles
//! their holds, releases a finished run's leftovers and takes a new reservation, with one
//! statement per window touched (`windows.rs`), so a run's ledger settles a call in the same
//! transaction as the reservation of its next one.

mod report;
#[cfg(test)]
mod tests;
mod windows;

use sqlx::{Database, Encode, QueryBuilder, Type};
use uuid::Uuid;

use super::binds::{bind, Arg};
use super::models::now;
use super::{with_writer, Store, StoreError};
use windows::{encode_windows, window_ops, Released, BOOK_SQL, USAGE_INSERT};

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
            at: now().1,
        };
        Ok(self.book(&[s], None, None).await?.totals)
    }

    /// Gives back every reservation `run_id` still holds (its calls were cut short, or its
    /// process died and the run is recovered). Returns how many were released.
    pub async fn release_budget_holds(&self, run_id: Uuid) -> Result<u64, StoreError> {
        Ok(self.book(&[], None, Some(run_id)).await?.released)
    }

    /// In one transaction: records and settles `settle` (a settlement whose hold is gone
    /// already only adds its spend), then, with `end_of`, releases every other hold of that
    /// run, then takes `reserve`. A reservation that does not fit changes nothing of its own
    /// (`hold: None`); the rest is written all the same. On an error nothing is written.
    pub async fn book(
        &self,
        settle: &[Settlement],
        reserve: Option<Reservation<'_>>,
        end_of: Option<Uuid>,
    ) -> Result<Booked, StoreError> {
        if let Some(r) = reserve {
            let hold = Hold {
                id: Uuid::new_v4(),
                tenant: r.tenant.to_string(),
                windows: r
                    .windows
                    .iter()
                    .map(|w| (w.kind.into(), w.starts_at))
                    .collect(),
                tokens: r.tokens,
                nanos: r.nanos,
            };
            if let Some(b) = self.book_once(settle, Some((r, &hold)), end_of).await? {
                return Ok(Booked {
                    hold: Some(hold),
                    ..b
                });
            }
        }
        if settle.is_empty() && end_of.is_none() {
            return Ok(Booked::default());
        }
        // Refused (rolled back): what is settled still is, on its own.
        let b = self.book_once(settle, None, end_of).await?;
        Ok(b.unwrap_or_default())
    }

    /// One try of [`Store::book`]: `None` when the reservation did not fit (rolled back). The
    /// window rows are written last, so their locks are held for one statement each and the
    /// commit.
    async fn book_once(
        &self,
        settle: &[Settlement],
        reserve: Option<(Reservation<'_>, &Hold)>,
        end_of: Option<Uuid>,
    ) -> Result<Option<Booked>, StoreError> {
        let holds: Vec<String> = settle
            .iter()
            .filter_map(|s| s.hold.as_ref().map(|h| h.id.to_string()))
            .collect();
        let _turn = self.write_turn().await;
        let (_, micros) = now();
        let booked = with_writer!(self, |pool| {
            let mut tx = pool.begin().await?;
            if !settle.is_empty() {
                usage_insert(settle).build().execute(&mut *tx).await?;
            }
            let mut held: Vec<String> = Vec::new();
            if !holds.is_empty() {
                let mut q = holds_delete(&holds);
                held = q.build_query_scalar().fetch_all(&mut *tx).await?;
            }
            let mut released: Vec<Released> = Vec::new();
            if let Some(run) = end_of {
                released = sqlx::query_as(
                    "DELETE FROM budget_holds WHERE run_id = $1 \
                     RETURNING tenant, windows, tokens, nanos",
                )
                .bind(run.to_string())
                .fetch_all(&mut *tx)
                .await?;
            }
            if let Some((r, h)) = reserve {
                let q = bind(sqlx::query(HOLD_INSERT), hold_row(&r, h, micros));
                q.execute(&mut *tx).await?;
            }
            let ops = window_ops(settle, &held, &released, reserve.map(|(r, _)| r).as_ref());
            let mut totals = Vec::with_capacity(ops.len());
            for o in &ops {
                let row: Option<WindowSpend> = sqlx::query_as(BOOK_SQL)
                    .bind(&o.tenant)
                    .bind(&o.kind)
                    .bind(o.starts_at)
                    .bind(o.spent_tokens)
                    .bind(o.spent_nanos)
                    .bind(o.reserve_tokens)
                    .bind(o.reserve_nanos)
                    .bind(o.release_tokens)
                    .bind(o.release_nanos)
                    .bind(o.limit_tokens)
                    .bind(o.limit_nanos)
                    .fetch_optional(&mut *tx)
                    .await?;
                match row {
                    Some(t) => totals.push(t),
                    None => break,
                }
            }
            if totals.len() == ops.len() {
                tx.commit().await?;
                Some(Booked {
                    hold: None,
                    totals,
                    released: released.len() as u64,
                })
            } else {
                tx.rollback().await?;
                None
            }
        });
        Ok(booked)
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

/// The usage records of `settle`, one row each.
fn usage_insert<'a, DB>(settle: &'a [Settlement]) -> QueryBuilder<DB>
where
    DB: Database,
    &'a String: Encode<'a, DB> + Type<DB>,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut q = QueryBuilder::new(USAGE_INSERT);
    q.push_values(settle, |mut row, s| {
        let u = &s.usage;
        row.push_bind(&u.tenant)
            .push_bind(s.at)
            .push_bind(u.run_id.to_string())
            .push_bind(&u.model)
            .push_bind(&u.agent)
            .push_bind(u.prompt_tokens)
            .push_bind(u.completion_tokens)
            .push_bind(u.cost_nanos)
            .push_bind(i64::from(u.unpriced))
            .push_bind(u.cache_read_tokens)
            .push_bind(u.cache_write_tokens)
            .push_bind(i64::from(u.estimated));
    });
    q
}

/// Takes a reservation: its hold's row.
const HOLD_INSERT: &str = "INSERT INTO budget_holds (id, run_id, tenant, windows, tokens, nanos, \
     created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)";

/// The values of [`HOLD_INSERT`] for reservation `r` held as `h` at `micros`.
fn hold_row<'a>(r: &Reservation<'a>, h: &Hold, micros: i64) -> Vec<Arg<'a>> {
    vec![
        Arg::String(h.id.to_string()),
        Arg::String(r.run_id.to_string()),
        Arg::Str(r.tenant),
        Arg::String(encode_windows(&h.windows)),
        Arg::Int(r.tokens),
        Arg::Int(r.nanos),
        Arg::Int(micros),
    ]
}

/// Deletes the holds `ids`, returning the ids that were still there (settled once).
fn holds_delete<'a, DB>(ids: &'a [String]) -> QueryBuilder<DB>
where
    DB: Database,
    &'a String: Encode<'a, DB> + Type<DB>,
{
    let mut q = QueryBuilder::new("DELETE FROM budget_holds WHERE id IN (");
    let mut list = q.separated(", ");
    for id in ids {
        list.push_bind(id);
    }
    q.push(") RETURNING id");
    q
}
