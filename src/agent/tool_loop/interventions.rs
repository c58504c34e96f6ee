//! What the loop adds to the conversation besides the model's own turns: follow-ups the user
//! sent while it worked, the note that a safeguard acted, and the completion checklist.

use super::*;

impl LoopRun<'_> {
    /// Drained interrupts become ONE pinned `[USER INTERRUPT]` message.
    pub(super) fn inject(&mut self, items: Vec<Interrupt>) {
        if items.is_empty() {
            return;
        }
        let contents: Vec<String> = items.iter().map(|i| i.content.clone()).collect();
        self.messages
            .push(Message::user(prompts::interrupt_message(&contents)).pinned());
        self.replies.heard_user();
        self.emit(StepEvent::Interrupt {
            iteration: self.iterations,
            ids: items.iter().map(|i| i.id.to_string()).collect(),
            contents,
        });
        self.processed.extend(items);
    }

    /// Drains the queue into the conversation; true when something arrived.
    ///
    /// Only while an iteration remains: on the last one the model would never read what was
    /// drained, so the messages stay queued and the loop's end reports them in
    /// `done.unprocessed_interrupts` instead of claiming them processed.
    pub(super) fn drain_interrupts(&mut self) -> bool {
        if self.iterations >= self.config.max_iterations {
            return false;
        }
        let items = self.handles.interrupts.drain();
        let any = !items.is_empty();
        self.inject(items);
        any
    }

    /// Says in a `step` event that a safeguard acted (its message to the model stays internal).
    pub(super) fn safeguard(&mut self, kind: SafeguardKind, tool: Option<String>) {
        self.replies.prompted(kind);
        match kind {
            SafeguardKind::Reflection => self.next_call = CallKind::Reflection,
            SafeguardKind::CompletionCheck => self.next_call = CallKind::CompletionCheck,
            _ => {}
        }
        self.emit(StepEvent::Safeguard {
            iteration: self.iterations,
            kind,
            tool,
            dag_step: None,
        });
    }

    /// Appends the completion checklist when it is due instead of accepting the answer; true
    /// when it did (the loop goes on).
    pub(super) fn check_completion(&mut self) -> bool {
        if !self.checklist_due() {
            return false;
        }
        self.checklist_done = true;
        self.messages.push(Message::user(prompts::COMPLETION_CHECK));
        self.safeguard(SafeguardKind::CompletionCheck, None);
        true
    }

    pub(super) fn checklist_due(&self) -> bool {
        let cfg = &self.config;
        cfg.completion_check
            && !self.checklist_done
            && self.reflection.executions() >= cfg.completion_check_min_tools
            && self.iterations < cfg.max_iterations
    }
}
