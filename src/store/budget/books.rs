//! What one transaction books, and [`book_in!`], the statements that write it inside a
//! transaction already open: a group commit of bookings (`batch.rs`), or the event writer's
//! transaction that stores a run's end (whose last calls it settles and whose leftover holds it
//! releases, so that whoever reads the run's `done` finds its spend settled).

use super::sql::Deleted;
use super::windows::{decode_windows, Tally, WindowKey, WindowRow};
use super::{Asked, Settlement};
use crate::store::binds::MANY_ROWS;

/// The bookings of one transaction: settlements, the runs ended (their other holds go), and
/// reservations in the order they are checked.
#[derive(Debug, Default)]
pub(in crate::store) struct Books<'a> {
    pub settle: Vec<&'a Settlement>,
    pub ends: Vec<String>,
    pub asked: Vec<&'a Asked>,
}

impl Books<'_> {
    pub fn is_empty(&self) -> bool {
        self.settle.is_empty() && self.ends.is_empty() && self.asked.is_empty()
    }

    /// The ids of the settled holds.
    pub fn settled(&self) -> Vec<String> {
        self.settle
            .iter()
            .filter_map(|s| s.hold.as_ref().map(|h| h.id.to_string()))
            .collect()
    }

    /// Every window the books touch, in lock order, once (`deleted`: the holds deleted).
    pub fn touched(&self, deleted: &[Deleted]) -> Vec<WindowKey> {
        let mut keys: Vec<WindowKey> = Vec::new();
        for h in self.settle.iter().filter_map(|s| s.hold.as_ref()) {
            keys.extend(
                h.windows
                    .iter()
                    .map(|(k, s)| (h.tenant.clone(), k.clone(), *s)),
            );
        }
        for a in &self.asked {
            let t = &a.hold.tenant;
            keys.extend(
                a.limits
                    .iter()
                    .map(|l| (t.clone(), l.kind.to_string(), l.starts_at)),
            );
        }
        for d in deleted {
            for (kind, starts_at) in decode_windows(&d.windows) {
                keys.push((d.tenant.clone(), kind, starts_at));
            }
        }
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// The books applied to the windows as read: the spend and the released holds, then each
    /// reservation in order. Returns the windows and the ids of the refused holds.
    pub fn apply(&self, deleted: &[Deleted], rows: Vec<WindowRow>) -> (Tally, Vec<String>) {
        let mut tally = Tally::new(rows);
        for s in &self.settle {
            if let Some(h) = &s.hold {
                let tokens = s
                    .usage
                    .prompt_tokens
                    .saturating_add(s.usage.completion_tokens);
                tally.spend(h, tokens, s.usage.cost_nanos);
            }
        }
        for d in deleted {
            tally.release(&d.tenant, &decode_windows(&d.windows), d.tokens, d.nanos);
        }
        let mut refused = Vec::new();
        for a in &self.asked {
            let h = &a.hold;
            if !tally.admit(&h.tenant, &a.limits, h.tokens, h.nanos) {
                refused.push(h.id.to_string());
            }
        }
        (tally, refused)
    }
}

/// The hold ids and run ids of the delete, in pieces of at most [`MANY_ROWS`] binds each.
pub(in crate::store) fn delete_chunks<'a>(
    ids: &'a [String],
    runs: &'a [String],
) -> Vec<(&'a [String], &'a [String])> {
    let mut out: Vec<(&[String], &[String])> =
        ids.chunks(MANY_ROWS).map(|c| (c, &[][..])).collect();
    out.extend(runs.chunks(MANY_ROWS).map(|c| (&[][..], c)));
    out
}

/// In the transaction `$tx` of `$store`, the [`Books`] `$books` taken at `$micros` (µs): the
/// usage records, the settled and released holds deleted, the new holds inserted, then the
/// windows read locked, each reservation checked in order, the windows written and the refused
/// holds deleted again. The window rows come last, so their locks are held for two statements
/// and the commit. Evaluates to `(tally, deleted holds, windows touched, refused hold ids)`;
/// `?` on a database error. The windows touched are to be remembered once committed
/// (`Store::remember_windows`).
macro_rules! book_in {
    ($store:expr, $tx:expr, $books:expr, $micros:expr) => {{
        use $crate::store::binds::{CACHED_ROWS, MANY_ROWS};
        use $crate::store::budget::sql;
        let books: &$crate::store::budget::Books<'_> = $books;
        let lock = if $store.is_shared() {
            " FOR UPDATE"
        } else {
            ""
        };
        for chunk in books.settle.chunks(MANY_ROWS) {
            let mut q = sql::usage_insert(chunk);
            let cached = chunk.len() <= CACHED_ROWS;
            q.build().persistent(cached).execute(&mut *$tx).await?;
        }
        let settled = books.settled();
        let mut deleted: Vec<sql::Deleted> = Vec::new();
        for (ids, runs) in $crate::store::budget::delete_chunks(&settled, &books.ends) {
            let mut q = sql::holds_delete(ids, runs);
            let found = q.build_query_as::<sql::Deleted>().fetch_all(&mut *$tx);
            deleted.extend(found.await?);
        }
        for chunk in books.asked.chunks(MANY_ROWS) {
            let mut q = sql::hold_rows(chunk, $micros);
            let cached = chunk.len() <= CACHED_ROWS;
            q.build().persistent(cached).execute(&mut *$tx).await?;
        }
        let keys = books.touched(&deleted);
        for chunk in $store.unknown_windows(&keys).chunks(MANY_ROWS) {
            let mut q = sql::ensure_windows(chunk);
            q.build().execute(&mut *$tx).await?;
        }
        let mut rows: Vec<sql::WindowRow> = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(MANY_ROWS) {
            let mut q = sql::windows_select(chunk, lock);
            let cached = chunk.len() <= CACHED_ROWS;
            let read = q.build_query_as::<sql::WindowRow>().persistent(cached);
            rows.extend(read.fetch_all(&mut *$tx).await?);
        }
        if rows.len() != keys.len() {
            // A window row remembered as existing is gone: forget them all, try again.
            $store.forget_windows();
            return Err($crate::store::StoreError::Database(
                "a budget window row vanished".into(),
            ));
        }
        let (tally, refused) = books.apply(&deleted, rows);
        for chunk in tally.deltas().chunks(MANY_ROWS) {
            let mut q = sql::windows_update(chunk);
            let cached = chunk.len() <= CACHED_ROWS;
            q.build().persistent(cached).execute(&mut *$tx).await?;
        }
        for ids in refused.chunks(MANY_ROWS) {
            let mut q = sql::holds_delete(ids, &[]);
            q.build().execute(&mut *$tx).await?;
        }
        (tally, deleted, keys, refused)
    }};
}
pub(crate) use book_in;
