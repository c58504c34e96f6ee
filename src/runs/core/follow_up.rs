//! Follow-ups that arrive after a run's loop has closed its interrupt queue (the answer is
//! streaming): they are accepted, kept here, and become the query of the next run, which the
//! server starts in the conversation when this one ends (docs/api.md). A user's message is never
//! lost.

use std::sync::Mutex;

use uuid::Uuid;

/// A run's late follow-ups; closed once when the run ends.
#[derive(Debug)]
pub struct FollowUps(Mutex<State>);

#[derive(Debug)]
struct State {
    open: bool,
    items: Vec<(Uuid, String)>,
}

impl Default for FollowUps {
    fn default() -> Self {
        Self(Mutex::new(State {
            open: true,
            items: Vec::new(),
        }))
    }
}

impl FollowUps {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps a follow-up for the next run; `false` once the run has ended.
    pub fn push(&self, id: Uuid, content: String) -> bool {
        let mut s = self.lock();
        if s.open {
            s.items.push((id, content));
        }
        s.open
    }

    /// Whether the run still takes follow-ups.
    pub fn is_open(&self) -> bool {
        self.lock().open
    }

    /// Takes one back before the next run starts; `false` when it is not (or no longer) here.
    pub fn recall(&self, id: Uuid) -> bool {
        let mut s = self.lock();
        let before = s.items.len();
        s.items.retain(|(i, _)| *i != id);
        s.items.len() < before
    }

    /// Closes the list and returns what it holds, in arrival order.
    pub fn close(&self) -> Vec<(Uuid, String)> {
        let mut s = self.lock();
        s.open = false;
        std::mem::take(&mut s.items)
    }
}
