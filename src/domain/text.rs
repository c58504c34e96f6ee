//! [`clip`]: model-supplied text as logs and prompts quote it. A model can write megabytes
//! where a short name is expected (a step id, a tool name); quoting that whole in every log
//! line and every later prompt multiplies it. Quotes go through here instead.

use std::borrow::Cow;

/// Characters of a model-supplied name (step id, tool name) a log line or a prompt quotes.
pub const NAME_CHARS: usize = 80;

/// `text` cut to `max_chars` characters on a char boundary, ending in `…` when cut; borrowed
/// when it already fits.
pub fn clip(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => Cow::Borrowed(text),
        Some((end, _)) => Cow::Owned(format!("{}…", &text[..end])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips_at_a_char_boundary_and_marks_the_cut() {
        assert_eq!(clip("héllo", 5), "héllo");
        assert!(matches!(clip("héllo", 5), Cow::Borrowed(_)));
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("日本語テキスト", 3), "日本語…");
        assert_eq!(clip("", 0), "");
        assert_eq!(clip("a", 0), "…");
    }
}
