//! [`Gate`]: how much of a reply's text may reach the client while it is written. Prose
//! streams at once; what may still turn out to be a tool call written as text (the shapes
//! `crate::llm::content_calls` recovers, which open with `{`, `[` or `<`, or a fence whose
//! body does) is held until the reply is complete, so that a call never flashes by as an
//! answer. A short preamble before such a fence ("Sure:") may already have streamed: the loop
//! then takes it back (`answer {status:"reset"}`).

/// The text of one reply and how much of it was let through.
#[derive(Debug, Default)]
pub struct Gate {
    text: String,
    /// Bytes of `text` let through.
    sent: usize,
    /// Nothing more goes through until the reply ends.
    held: bool,
}

/// What the text from a position on means for streaming.
enum Ahead {
    /// Safe to show up to this many bytes further.
    Show(usize),
    /// Not known yet: wait for more text.
    Wait,
    /// May be a call: hold everything from here.
    Hold,
}

impl Gate {
    /// Adds `piece`; returns the text that may be shown now (possibly empty).
    pub fn push(&mut self, piece: &str) -> &str {
        let from = self.sent;
        self.text.push_str(piece);
        while !self.held && self.sent < self.text.len() {
            match self.ahead() {
                Ahead::Show(n) => self.sent += n,
                Ahead::Wait => break,
                Ahead::Hold => self.held = true,
            }
        }
        &self.text[from..self.sent]
    }

    /// The whole text so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    fn ahead(&self) -> Ahead {
        let rest = &self.text[self.sent..];
        if self.text[..self.sent].trim().is_empty() {
            let lead = rest.trim_start();
            let blank = rest.len() - lead.len();
            return match lead.chars().next() {
                None => Ahead::Wait,
                Some('{' | '[' | '<') => Ahead::Hold,
                Some('`') if blank > 0 => Ahead::Show(blank),
                Some('`') => fence(lead),
                Some(_) => Ahead::Show(blank + until_backtick(lead)),
            };
        }
        match rest.chars().next() {
            Some('`') => fence(rest),
            _ => Ahead::Show(until_backtick(rest)),
        }
    }
}

/// Bytes before the first backtick of `text` (all of it when there is none), at least one
/// character when `text` does not start with one.
fn until_backtick(text: &str) -> usize {
    text.find('`').unwrap_or(text.len())
}

/// `text` starts with a backtick: an inline one shows; a fence shows once its body's first
/// character is known and cannot open a call.
fn fence(text: &str) -> Ahead {
    let ticks = text.len() - text.trim_start_matches('`').len();
    if ticks < 3 {
        return if ticks == text.len() {
            Ahead::Wait
        } else {
            Ahead::Show(ticks)
        };
    }
    let after = &text[ticks..];
    let tag = after
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(after.len());
    let body = after[tag..].trim_start();
    match body.chars().next() {
        None => Ahead::Wait,
        Some('{' | '[' | '<') => Ahead::Hold,
        Some(_) => Ahead::Show(text.len() - body.len()),
    }
}
