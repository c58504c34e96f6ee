//! What one transaction of the [`EventWriter`](super::EventWriter) writes for each run: its
//! unwritten events from its cursor, a raised ceiling, a checkpoint, and its end once every
//! event before `done` is in.

use std::sync::Arc;

use uuid::Uuid;

use super::{State, Tracked, MAX_ROWS_PER_TICK};
use crate::agent::checkpoint::CheckpointJson;
use crate::runs::core::log::EventLog;
use crate::store::{RunBatch, StoredEvent, EVENT_ID_BLOCK};

/// What one tick writes for one run.
pub(super) struct Planned {
    pub(super) run_id: Uuid,
    pub(super) batch: RunBatch,
    pub(super) last_seq: u64,
    /// The event-id ceiling this write commits (readers may see up to it afterwards).
    pub(super) raise: Option<u64>,
    /// The checkpoint this write stores.
    pub(super) checkpoint: Option<Arc<CheckpointJson>>,
    pub(super) closes: bool,
    /// The run's last write failed: it is written on its own so it cannot fail the others'.
    pub(super) suspect: bool,
}

/// The ceiling a run's next write must commit: a new block above its last id once half of the
/// committed one is used (so in a steady stream readers never wait for it), else `None`.
fn next_ceiling(log: &EventLog) -> Option<u64> {
    let (ceiling, last) = (log.ceiling(), log.len() as u64);
    let block = EVENT_ID_BLOCK as u64;
    (ceiling != u64::MAX && last + block / 2 > ceiling).then_some(last + block)
}

impl State {
    /// What one transaction writes for `ids`, in that order, within [`MAX_ROWS_PER_TICK`].
    pub(super) fn plan_runs(&self, ids: Vec<Uuid>) -> Vec<Planned> {
        let mut budget = MAX_ROWS_PER_TICK;
        let mut planned = Vec::new();
        for id in ids {
            if budget == 0 {
                break;
            }
            if let Some(t) = self.runs.get(&id) {
                planned.extend(t.plan(id, &mut budget));
            }
        }
        planned
    }
}

impl Tracked {
    /// The run's unwritten events (at most `budget`, taken from it), plus `done` and its
    /// terminal state when they are then all included; `None` when there is nothing to write.
    pub(super) fn plan(&self, id: Uuid, budget: &mut usize) -> Option<Planned> {
        let pending = self.log.pending(self.written);
        let raise = next_ceiling(&self.log);
        let take = pending.len().min(*budget);
        let all = take == pending.len();
        let mut events: Vec<StoredEvent> = pending[..take]
            .iter()
            .map(|e| StoredEvent {
                seq: e.id as i64,
                name: e.name.to_string(),
                data: e.data.to_string(),
            })
            .collect();
        let mut last_seq = events.last().map(|e| e.seq as u64).unwrap_or(self.written);
        *budget -= take;
        let mut finish = None;
        let closes = all && self.closing.is_some();
        if closes {
            if let Some((Some(c), _)) = &self.closing {
                events.push(c.done.clone());
                last_seq = c.done.seq as u64;
                finish = Some(c.state.clone());
            }
        }
        let checkpoint = self
            .checkpoint
            .as_ref()
            .filter(|c| c.after <= last_seq)
            .map(|c| &c.data);
        if events.is_empty() && !closes && raise.is_none() && checkpoint.is_none() {
            return None;
        }
        Some(Planned {
            run_id: id,
            batch: RunBatch {
                run_id: id,
                events,
                ceiling: raise.map(|c| i64::try_from(c).unwrap_or(i64::MAX)),
                checkpoint: checkpoint.cloned(),
                finish,
                epoch: self.fence.as_ref().map(|f| f.epoch),
            },
            last_seq,
            raise,
            checkpoint: checkpoint.cloned(),
            closes,
            suspect: self.failures > 0,
        })
    }
}
