//! [`JsonAnswer`]: the `answer` string of a JSON-mode `final_answer` action, decoded while the
//! reply streams. Only the first top-level object counts (prose or a fence before it is
//! skipped); its `answer` is given out once its `type` is known to be `final_answer` (what
//! came before that is given out then); values nested deeper are skipped whole. The complete
//! reply is still parsed as usual when it ends: this only decides what may show early.

use crate::agent::prompts::{unlabelled, OBSERVATION_LABEL};

/// Where the scanner is.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Before the object's `{`.
    #[default]
    Before,
    /// Inside the object, expecting a key (or `}`).
    Key,
    /// Inside a key string.
    KeyText,
    /// After a key, expecting `:`.
    Colon,
    /// Expecting a value.
    Value,
    /// Inside a top-level string value.
    Text,
    /// Inside a nested value (object, array) or a bare literal.
    Skip,
    /// After the object: nothing more counts.
    Done,
}

/// The scanner's state; see the module docs.
#[derive(Debug, Default)]
pub struct JsonAnswer {
    at: At,
    /// The key being read or whose value is read.
    key: String,
    /// The `type` value read so far.
    kind: String,
    /// The `answer` value decoded so far, and how much of it was given out.
    answer: String,
    given: usize,
    final_answer: bool,
    escape: Option<Escape>,
    /// Nesting depth inside a skipped value, and whether it is inside a string there.
    depth: u32,
    in_string: bool,
    /// A high surrogate waiting for its pair.
    high: Option<u16>,
}

/// An escape sequence being read: `\` seen, or `\u` with these hex digits.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Escape {
    Started,
    Unicode(String),
}

impl JsonAnswer {
    /// Reads the next piece of the reply; returns the answer text it makes available.
    pub fn push(&mut self, piece: &str) -> String {
        for c in piece.chars() {
            self.step(c);
        }
        if !self.final_answer || !self.past_label() {
            return String::new();
        }
        let out = self.answer[self.given..].to_string();
        self.given = self.answer.len();
        out
    }

    /// Whether the answer may be given out: nothing is while it may still be the observation
    /// label a small model copies (`crate::agent::prompts::unlabelled`, which the parsed
    /// answer goes through too); once past it, `given` skips it.
    fn past_label(&mut self) -> bool {
        if self.given > 0 {
            return true;
        }
        let lead = self.answer.trim_start();
        if OBSERVATION_LABEL.starts_with(lead) {
            return false;
        }
        if lead.starts_with(OBSERVATION_LABEL) {
            let rest = unlabelled(&self.answer);
            if rest.is_empty() {
                return false;
            }
            self.given = self.answer.len() - rest.len();
        }
        true
    }

    fn step(&mut self, c: char) {
        match self.at {
            At::Before if c == '{' => self.at = At::Key,
            At::Before | At::Done => {}
            At::Key => match c {
                '"' => {
                    self.key.clear();
                    self.at = At::KeyText;
                }
                '}' => self.at = At::Done,
                _ => {}
            },
            At::KeyText => {
                if let Some(ch) = self.string_char(c) {
                    match ch {
                        Str::End => self.at = At::Colon,
                        Str::Char(ch) => self.key.push(ch),
                    }
                }
            }
            At::Colon if c == ':' => self.at = At::Value,
            At::Colon => {}
            At::Value => self.value_start(c),
            At::Text => {
                if let Some(s) = self.string_char(c) {
                    match s {
                        Str::End => self.value_end(),
                        Str::Char(ch) => self.text_char(ch),
                    }
                }
            }
            At::Skip => self.skip(c),
        }
    }

    fn value_start(&mut self, c: char) {
        match c {
            '"' => self.at = At::Text,
            c if c.is_whitespace() => {}
            '{' | '[' => {
                self.depth = 1;
                self.at = At::Skip;
            }
            _ => {
                // A literal (number, true, null): skipped up to the next `,` or `}`.
                self.depth = 0;
                self.at = At::Skip;
            }
        }
    }

    fn skip(&mut self, c: char) {
        if self.in_string {
            match (&self.escape, c) {
                (Some(_), _) => self.escape = None,
                (None, '\\') => self.escape = Some(Escape::Started),
                (None, '"') => self.in_string = false,
                _ => {}
            }
            return;
        }
        match c {
            '"' => self.in_string = true,
            '{' | '[' => self.depth += 1,
            '}' | ']' if self.depth > 0 => {
                self.depth -= 1;
                if self.depth == 0 {
                    self.at = At::Key;
                }
            }
            '}' => self.at = At::Done,
            ',' if self.depth == 0 => self.at = At::Key,
            _ => {}
        }
    }

    fn text_char(&mut self, ch: char) {
        match self.key.as_str() {
            "type" => self.kind.push(ch),
            "answer" => self.answer.push(ch),
            _ => {}
        }
    }

    fn value_end(&mut self) {
        if self.key == "type" && self.kind.trim() == "final_answer" {
            self.final_answer = true;
        }
        self.at = At::Key;
    }

    /// One character of a string's body: its decoded character, its end, or nothing yet
    /// (inside an escape).
    fn string_char(&mut self, c: char) -> Option<Str> {
        match self.escape.take() {
            None => match c {
                '\\' => {
                    self.escape = Some(Escape::Started);
                    None
                }
                '"' => Some(Str::End),
                c => Some(Str::Char(c)),
            },
            Some(Escape::Started) => match c {
                'u' => {
                    self.escape = Some(Escape::Unicode(String::new()));
                    None
                }
                'n' => Some(Str::Char('\n')),
                't' => Some(Str::Char('\t')),
                'r' => Some(Str::Char('\r')),
                'b' => Some(Str::Char('\u{8}')),
                'f' => Some(Str::Char('\u{c}')),
                c => Some(Str::Char(c)),
            },
            Some(Escape::Unicode(mut hex)) => {
                hex.push(c);
                if hex.len() < 4 {
                    self.escape = Some(Escape::Unicode(hex));
                    return None;
                }
                let unit = u16::from_str_radix(&hex, 16).unwrap_or(0xFFFD);
                self.unit(unit).map(Str::Char)
            }
        }
    }

    /// A `\uXXXX` code unit: a character, or half of a surrogate pair.
    fn unit(&mut self, unit: u16) -> Option<char> {
        if (0xD800..0xDC00).contains(&unit) {
            self.high = Some(unit);
            return None;
        }
        let high = self.high.take();
        match high {
            Some(h) if (0xDC00..0xE000).contains(&unit) => {
                char::decode_utf16([h, unit]).next()?.ok()
            }
            _ => Some(char::from_u32(u32::from(unit)).unwrap_or('\u{FFFD}')),
        }
    }
}

/// What one character of a string's body was.
enum Str {
    Char(char),
    End,
}
