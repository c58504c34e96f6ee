//! [`SseData`]: the `data` of each event of a provider's SSE stream, decoded straight from the
//! bytes as they arrive (the WHATWG event-stream rules the provider side needs: LF, CRLF and
//! CR line ends, a leading BOM, comments, `data` lines joined by `\n`, other fields ignored).
//!
//! It replaces `eventsource-stream` on the token path: that crate's nom parser, its streaming
//! UTF-8 pass and its per-event strings were a measured part of each token's cost
//! (BENCHMARKS.md, "Why the code is shaped this way"). Here a token costs one scan of its bytes
//! and one string, the data itself.

/// The event-stream decoder of one response body. Feed it chunks with [`Self::push`] and take
/// events with [`Self::next_data`]; [`Self::finish`] once the body has ended.
#[derive(Debug, Default)]
pub struct SseData {
    /// Bytes received and not yet consumed, from `pos`.
    buf: Vec<u8>,
    pos: usize,
    /// The `data` lines of the event being read, each followed by `\n`.
    data: Vec<u8>,
    /// The body ended: a last line without its line end counts, a lone CR ends a line.
    ended: bool,
    /// The first bytes were looked at (a leading BOM is dropped, once).
    started: bool,
}

/// The data of an event was not UTF-8.
#[derive(Debug, PartialEq, Eq)]
pub struct NotUtf8;

impl SseData {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the next chunk of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.pos > 0 && self.pos >= self.buf.len() / 2 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The body ended: what is left may still hold complete events (an event without its
    /// final blank line is dispatched, as providers that end on `data: [DONE]\n` expect).
    pub fn finish(&mut self) {
        self.ended = true;
    }

    /// True once [`Self::finish`] was called: no more bytes will come.
    pub fn is_finished(&self) -> bool {
        self.ended
    }

    /// The data of the next complete event, if one is buffered.
    pub fn next_data(&mut self) -> Option<Result<String, NotUtf8>> {
        if !self.started && !self.skip_bom() {
            return None;
        }
        while let Some(line) = self.next_line() {
            let (start, end) = line;
            if start == end {
                if let Some(event) = self.dispatch() {
                    return Some(event);
                }
                continue;
            }
            self.field(start, end);
        }
        if self.ended {
            return self.dispatch();
        }
        None
    }

    /// Drops a leading BOM; false while too few bytes arrived to tell.
    fn skip_bom(&mut self) -> bool {
        const BOM: &[u8] = b"\xEF\xBB\xBF";
        let head = &self.buf[self.pos..];
        if head.len() < BOM.len() && BOM.starts_with(head) && !self.ended {
            return false;
        }
        if head.starts_with(BOM) {
            self.pos += BOM.len();
        }
        self.started = true;
        true
    }

    /// The bounds of the next whole line in `buf` (without its end), consuming it.
    fn next_line(&mut self) -> Option<(usize, usize)> {
        let rest = &self.buf[self.pos..];
        let Some(at) = rest.iter().position(|&b| b == b'\n' || b == b'\r') else {
            if self.ended && !rest.is_empty() {
                let line = (self.pos, self.buf.len());
                self.pos = self.buf.len();
                return Some(line);
            }
            return None;
        };
        let start = self.pos;
        let mut next = start + at + 1;
        if rest[at] == b'\r' {
            match self.buf.get(next) {
                Some(b'\n') => next += 1,
                Some(_) => {}
                // A CR at the end of what arrived: its LF may be in the next chunk.
                None if !self.ended => return None,
                None => {}
            }
        }
        self.pos = next;
        Some((start, start + at))
    }

    /// One non-empty line: `data` is kept, comments and other fields are ignored.
    fn field(&mut self, start: usize, end: usize) {
        let line = &self.buf[start..end];
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => return,
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        if name == b"data" {
            self.data.extend_from_slice(value);
            self.data.push(b'\n');
        }
    }

    /// The event read so far, if it has data (an event without data is not dispatched).
    fn dispatch(&mut self) -> Option<Result<String, NotUtf8>> {
        if self.data.is_empty() {
            return None;
        }
        self.data.pop();
        let data = std::mem::take(&mut self.data);
        Some(String::from_utf8(data).map_err(|_| NotUtf8))
    }
}

#[cfg(test)]
mod tests;
