//! The calls of one reply as a batch: identical calls (same tool, canonical arguments) run once
//! and each of the others gets a copy of that result under its own call id, so every call the
//! model made is answered; the rest run concurrently. A gated batch runs its first call alone
//! and may stop there (the loop's repeat rule), leaving the other calls not run.

use std::collections::HashMap;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio_util::sync::CancellationToken;

use super::{Executed, Executor, PendingCall, CANCELLED_RESULT};
use crate::agent::record::StepRecord;
use crate::agent::safeguards::call_key;

/// What a batch did.
#[derive(Debug, Default)]
pub struct Batch {
    /// The calls that were answered, in call order.
    pub executed: Vec<Executed>,
    /// The run was cancelled meanwhile (unfinished calls carry [`CANCELLED_RESULT`]).
    pub cancelled: bool,
    /// The gate stopped the batch after its first call: these calls were not run, nor announced.
    pub not_run: Vec<PendingCall>,
    /// The gate stopped the batch.
    pub stopped: bool,
}

impl Batch {
    /// Calls answered without running (none of them cancelled or stopped).
    pub fn answered(executed: Vec<Executed>) -> Self {
        Self {
            executed,
            ..Self::default()
        }
    }
}

/// For each call, the index of the first call of the batch identical to it (itself when none
/// is before it). Calls whose arguments are unreadable are never identical to another.
fn originals(calls: &[PendingCall]) -> Vec<usize> {
    let mut first: HashMap<u64, usize> = HashMap::new();
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| match &c.arguments {
            Ok(args) => *first.entry(call_key(&c.tool, args)).or_insert(i),
            Err(_) => i,
        })
        .collect()
}

impl Executor {
    /// Runs every call concurrently, identical ones once. Returns results in call order and
    /// whether the batch was cancelled (unfinished calls then carry [`CANCELLED_RESULT`]).
    pub async fn execute_batch(
        &self,
        iteration: u32,
        calls: Vec<PendingCall>,
        cancel: &CancellationToken,
    ) -> (Vec<Executed>, bool) {
        let batch = self
            .execute_gated(iteration, calls, cancel, None::<fn(&Executed) -> bool>)
            .await;
        (batch.executed, batch.cancelled)
    }

    /// As [`Self::execute_batch`]; with a `gate`, the first call (and the calls identical to
    /// it) runs alone first, and when `gate` says so of its result the others are not run.
    pub async fn execute_gated(
        &self,
        iteration: u32,
        calls: Vec<PendingCall>,
        cancel: &CancellationToken,
        gate: Option<impl FnOnce(&Executed) -> bool>,
    ) -> Batch {
        let origin = originals(&calls);
        let mut results: Vec<Option<Executed>> = vec![None; calls.len()];
        let (first, rest): (Vec<usize>, Vec<usize>) = match gate {
            Some(_) => (0..calls.len()).partition(|&i| origin[i] == 0),
            None => ((0..calls.len()).collect(), Vec::new()),
        };
        let mut cancelled = self
            .run_phase(iteration, &calls, &origin, &first, &mut results, cancel)
            .await;
        let stopped = match (gate, results.first()) {
            (Some(gate), Some(Some(done))) => !cancelled && gate(done),
            _ => false,
        };
        if !stopped && !rest.is_empty() {
            cancelled |= self
                .run_phase(iteration, &calls, &origin, &rest, &mut results, cancel)
                .await;
        }
        let mut batch = Batch {
            cancelled,
            stopped,
            ..Batch::default()
        };
        for (result, call) in results.into_iter().zip(calls) {
            match result {
                Some(done) => batch.executed.push(done),
                None => batch.not_run.push(call),
            }
        }
        batch
    }

    /// Announces and runs the calls at `which` (the originals concurrently, then the copies),
    /// storing each result in `results`; true when cancelled.
    async fn run_phase(
        &self,
        iteration: u32,
        calls: &[PendingCall],
        origin: &[usize],
        which: &[usize],
        results: &mut [Option<Executed>],
        cancel: &CancellationToken,
    ) -> bool {
        for &i in which {
            self.emit_start(iteration, &calls[i]);
        }
        let mut cancelled = false;
        {
            let mut running: FuturesUnordered<_> = which
                .iter()
                .filter(|&&i| origin[i] == i)
                .map(|&i| async move { (i, self.execute_one(iteration, &calls[i]).await) })
                .collect();
            loop {
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => { cancelled = true; break; }
                    next = running.next() => match next {
                        Some((i, done)) => results[i] = Some(done),
                        None => break,
                    },
                }
            }
        }
        for &i in which {
            let done = match &results[origin[i]] {
                _ if origin[i] == i && results[i].is_some() => continue,
                Some(original) if origin[i] != i => self.copy_of(original, &calls[i]),
                _ => self.cancelled_result(iteration, &calls[i]),
            };
            results[i] = Some(done);
        }
        cancelled
    }

    /// The result of `original` as the answer to the identical `call`.
    fn copy_of(&self, original: &Executed, call: &PendingCall) -> Executed {
        let record = StepRecord {
            call_id: call.call_id.clone(),
            duration_ms: 0,
            ..original.record.clone()
        };
        self.emit_end(&record, Vec::new());
        Executed {
            record,
            ran: false,
            copy: true,
        }
    }

    fn cancelled_result(&self, iteration: u32, c: &PendingCall) -> Executed {
        self.answered(iteration, c, CANCELLED_RESULT)
    }
}
