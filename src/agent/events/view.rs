//! [`EventView`]: a stored event read back for a protocol encoder. Answer deltas, one per token,
//! take a borrowed path that builds no enum and copies no text without escapes; every other
//! event is the typed [`AgentEvent`], or the reason its data did not read.

use std::borrow::Cow;

use serde::Deserialize;

use super::{AgentEvent, AnswerEvent, EventName};

/// One logged event as an encoder sees it.
// Matched where it is made and never stored: a box would be an allocation per event for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum EventView<'a> {
    /// An `answer` delta's text (every delta reads as this, never as `Agent`).
    AnswerDelta(Cow<'a, str>),
    /// Any other event.
    Agent(AgentEvent),
    /// Data that is not its name's event (never written by reagent; a log from elsewhere).
    Unreadable(EventName, serde_json::Error),
}

/// An `answer` event's data, borrowed where it has no escapes. `content` is a bare `Cow`: serde
/// borrows only there (an `Option<Cow>` always copies); data without it reads the typed way.
#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow)]
    status: &'a str,
    #[serde(borrow)]
    content: Cow<'a, str>,
}

impl<'a> EventView<'a> {
    /// Reads an event from its stored name and data (names read as [`EventName::from_stored`]).
    pub fn read(name: &str, data: &'a str) -> Self {
        let name = EventName::from_stored(name);
        if name == EventName::Answer {
            if let Ok(Delta {
                status: "delta",
                content,
            }) = serde_json::from_str::<Delta>(data)
            {
                return EventView::AnswerDelta(content);
            }
        }
        match AgentEvent::from_parts(name.as_str(), data) {
            Ok(AgentEvent::Answer(AnswerEvent::Delta { content })) => {
                EventView::AnswerDelta(Cow::Owned(content))
            }
            Ok(event) => EventView::Agent(event),
            Err(e) => EventView::Unreadable(name, e),
        }
    }
}

#[cfg(test)]
mod tests;
