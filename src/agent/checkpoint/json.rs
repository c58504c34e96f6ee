//! [`JsonList`]: the JSON of an append-only list, kept between checkpoints so that a checkpoint
//! serialises only what was appended since the previous one (BENCHMARKS.md, issue 23: two
//! checkpoints per iteration each serialising the whole history made an iteration's cost grow
//! with it).

use serde::Serialize;

/// Lists shorter than this are serialised afresh each time and nothing is kept, so a run with
/// a short history holds no second copy of it.
pub const KEEP_FROM: usize = 32;

/// The serialised elements `0..count` of a list that is only appended to, comma-separated,
/// without brackets. Whoever holds one must replace it (`default()`) when the list is replaced.
#[derive(Clone, Debug, Default)]
pub struct JsonList {
    text: String,
    count: usize,
}

impl JsonList {
    /// Writes `items` as a JSON array to `out`. `items` must begin with the elements this
    /// cache saw before (it was only appended to since); a shorter list is serialised afresh.
    pub fn write<T: Serialize>(&mut self, items: &[T], out: &mut String) -> serde_json::Result<()> {
        if items.len() < self.count {
            *self = Self::default();
        }
        out.push('[');
        if self.count == 0 && items.len() < KEEP_FROM {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(item)?);
            }
        } else {
            for item in &items[self.count..] {
                if self.count > 0 {
                    self.text.push(',');
                }
                self.text.push_str(&serde_json::to_string(item)?);
                self.count += 1;
            }
            out.push_str(&self.text);
        }
        out.push(']');
        Ok(())
    }

    /// Elements kept serialised (0 while the list is short).
    pub fn kept(&self) -> usize {
        self.count
    }

    /// Bytes of the JSON kept, so a writer can reserve room for it once.
    pub fn kept_len(&self) -> usize {
        self.text.len()
    }
}
