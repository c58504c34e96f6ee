//! A checkpoint's JSON without copying the history into each one (BENCHMARKS.md).
//!
//! [`JsonList`] keeps the JSON of an append-only list (the messages, the steps) between
//! checkpoints, so a checkpoint serialises only what was appended since the previous one, and
//! keeps it in shared chunks of about [`CHUNK`] bytes, so a checkpoint shares them instead of
//! copying them: two checkpoints per iteration each copying the whole history made an
//! iteration's cost grow with it. [`CheckpointJson`] is such a checkpoint, joined into one
//! string only by the writer that stores it, once per write.

use std::sync::Arc;

use serde::ser::Error as _;
use serde::Serialize;

/// By default, lists shorter than this are serialised afresh each time and nothing is kept, so
/// a run with a short history holds no second copy of it.
pub const KEEP_FROM: usize = 32;

/// The steps are kept from their fourth: every checkpoint writes them all, and with the default
/// a run re-serialised up to 31 of them twice per iteration, most of what a checkpoint cost.
pub const STEPS_KEEP_FROM: usize = 4;

/// A kept chunk is closed (and then only shared) once it holds this many bytes, so what one
/// checkpoint copies is at most about this much, whatever the history's length.
pub const CHUNK: usize = 16 * 1024;

/// Room left after a piece a checkpoint owns, for the brackets and field names that follow it.
const SLACK: usize = 32;

/// A checkpoint's JSON as its pieces in order: text of its own, and chunks shared with the
/// lists that keep them. [`Self::join`] writes the whole JSON.
#[derive(Clone, Debug, Default)]
pub struct CheckpointJson {
    parts: Vec<Part>,
    len: usize,
}

#[derive(Clone, Debug)]
enum Part {
    Own(String),
    Shared(Arc<String>),
}

impl CheckpointJson {
    /// Appends `text` (to the last piece when it is the checkpoint's own).
    pub fn push_str(&mut self, text: &str) {
        self.len += text.len();
        match self.parts.last_mut() {
            Some(Part::Own(last)) => last.push_str(text),
            _ => self.parts.push(Part::Own(text.to_string())),
        }
    }

    /// Appends `text` as a piece of its own (no copy): `text` should have room for the short
    /// pieces that follow it (brackets, the next field's name), or they reallocate it.
    pub fn push_owned(&mut self, text: String) {
        self.len += text.len();
        self.parts.push(Part::Own(text));
    }

    /// Appends a chunk that stays shared.
    pub(super) fn push_shared(&mut self, chunk: &Arc<String>) {
        self.len += chunk.len();
        self.parts.push(Part::Shared(Arc::clone(chunk)));
    }

    /// Bytes of the whole JSON.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes copied into this checkpoint (the rest it shares with the lists that keep them).
    pub fn own_len(&self) -> usize {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Own(text) => text.len(),
                Part::Shared(_) => 0,
            })
            .sum()
    }

    /// The whole JSON in one string.
    pub fn join(&self) -> String {
        let mut out = String::with_capacity(self.len);
        for part in &self.parts {
            out.push_str(match part {
                Part::Own(text) => text,
                Part::Shared(chunk) => chunk,
            });
        }
        out
    }
}

impl From<String> for CheckpointJson {
    fn from(text: String) -> Self {
        Self {
            len: text.len(),
            parts: vec![Part::Own(text)],
        }
    }
}

/// Equal when they join to the same JSON, however they are cut.
impl PartialEq for CheckpointJson {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.join() == other.join()
    }
}

/// The serialised elements `0..count` of a list that is only appended to, comma-separated,
/// without brackets: closed chunks, then the one still being filled. Whoever holds one must
/// replace it (`default()`) when the list is replaced.
#[derive(Clone, Debug)]
pub struct JsonList {
    closed: Vec<Arc<String>>,
    open: String,
    count: usize,
    keep_from: usize,
    /// Bytes of the last list serialised afresh (the next one is sized by it).
    fresh_len: usize,
    /// One element's JSON, reused for each element appended.
    item: Vec<u8>,
}

impl Default for JsonList {
    fn default() -> Self {
        Self::keeping_from(KEEP_FROM)
    }
}

impl JsonList {
    /// A list kept serialised once it has `keep_from` elements (serialised afresh before).
    pub fn keeping_from(keep_from: usize) -> Self {
        Self {
            closed: Vec::new(),
            open: String::new(),
            count: 0,
            keep_from,
            fresh_len: 0,
            item: Vec::new(),
        }
    }

    /// Writes `items` as a JSON array to `out`. `items` must begin with the elements this
    /// cache saw before (it was only appended to since); a shorter list is serialised afresh.
    pub fn write<T: Serialize>(
        &mut self,
        items: &[T],
        out: &mut CheckpointJson,
    ) -> serde_json::Result<()> {
        if items.len() < self.count {
            *self = Self::keeping_from(self.keep_from);
        }
        if self.count == 0 && items.len() < self.keep_from {
            // Serialised straight into the piece this checkpoint owns, sized as last time.
            let mut buf = Vec::with_capacity(self.fresh_len + SLACK);
            serde_json::to_writer(&mut buf, items)?;
            self.fresh_len = buf.len();
            out.push_owned(String::from_utf8(buf).map_err(serde_json::Error::custom)?);
            return Ok(());
        }
        self.append(&items[self.count..])?;
        out.push_str("[");
        out.parts.reserve(self.closed.len() + 1);
        for chunk in &self.closed {
            out.push_shared(chunk);
        }
        // One exact copy of the open chunk, with room for what follows it.
        let mut open = String::with_capacity(self.open.len() + SLACK);
        open.push_str(&self.open);
        open.push(']');
        out.push_owned(open);
        Ok(())
    }

    fn append<T: Serialize>(&mut self, items: &[T]) -> serde_json::Result<()> {
        for item in items {
            self.item.clear();
            serde_json::to_writer(&mut self.item, item)?;
            let text = std::str::from_utf8(&self.item).map_err(serde_json::Error::custom)?;
            if self.count > 0 {
                self.open.push(',');
            }
            self.open.push_str(text);
            self.count += 1;
            if self.open.len() >= CHUNK {
                self.closed.push(Arc::new(std::mem::take(&mut self.open)));
            }
        }
        Ok(())
    }

    /// Elements kept serialised (0 while the list is short).
    pub fn kept(&self) -> usize {
        self.count
    }

    /// Chunks closed and shared by every checkpoint from now on.
    pub fn closed_chunks(&self) -> usize {
        self.closed.len()
    }
}
