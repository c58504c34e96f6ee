//! The rules client text must follow before the service stores it (docs/api.md), in one place
//! for every API that starts runs or writes conversations.

use super::manager::RunError;

/// Longest conversation title (a list entry, not a document).
pub const MAX_TITLE_CHARS: usize = 200;

/// Non-empty, at most `max` characters (docs/api.md), and storable ([`check_storable`]).
pub fn check_text(field: &str, text: &str, max: usize) -> Result<(), RunError> {
    check_storable(field, text)?;
    if text.trim().is_empty() {
        return Err(RunError::Invalid(format!("{field} must not be empty")));
    }
    check_at_most(field, text, max)
}

/// At most `max` characters and storable; may be empty.
pub fn check_at_most(field: &str, text: &str, max: usize) -> Result<(), RunError> {
    check_storable(field, text)?;
    if text.chars().count() > max {
        return Err(RunError::Invalid(format!(
            "{field} is longer than {max} characters"
        )));
    }
    Ok(())
}

/// Text the service stores must not contain NUL (U+0000): PostgreSQL's `text` cannot hold
/// it, so it would fail there as a 500 while SQLite took it; refused on both as a 400.
pub fn check_storable(field: &str, text: &str) -> Result<(), RunError> {
    if text.contains('\0') {
        return Err(RunError::Invalid(format!(
            "{field} must not contain NUL (U+0000) characters"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_limits() {
        assert!(check_text("query", "hi", 5).is_ok());
        assert!(check_text("query", "  \n", 5).is_err());
        assert!(check_text("query", "ééééé", 5).is_ok());
        assert!(check_text("query", "éééééé", 5).is_err());
        assert!(check_text("query", "a\0b", 5).is_err());
    }
}
