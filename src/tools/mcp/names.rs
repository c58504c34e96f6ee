//! Reagent names of MCP tools (docs/protocols.md): `<server>__<tool>`, characters outside
//! `[A-Za-z0-9_-]` replaced by `_`, cut to 64 characters; a name two tools end up with is an
//! error naming both.

use std::collections::HashMap;

/// OpenAI's function-name limit, which every provider accepts.
pub const MAX_NAME: usize = 64;

/// The reagent name of `tool` on `server`.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME)
        .collect()
}

/// The first name claimed twice: `(name, first owner, second owner)`, owners as given
/// (e.g. `files: read.x`).
pub fn first_collision(
    claims: impl IntoIterator<Item = (String, String)>,
) -> Option<(String, String, String)> {
    let mut seen: HashMap<String, String> = HashMap::new();
    for (name, owner) in claims {
        if let Some(first) = seen.get(&name) {
            return Some((name, first.clone(), owner));
        }
        seen.insert(name, owner);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_sanitises_and_cuts() {
        assert_eq!(tool_name("files", "read_file"), "files__read_file");
        assert_eq!(tool_name("files", "read.file/v2"), "files__read_file_v2");
        let long = tool_name("s", &"t".repeat(100));
        assert_eq!(long.len(), MAX_NAME);
        assert!(long.starts_with("s__t"));
    }

    #[test]
    fn collisions_name_both_owners() {
        let claims = vec![
            (tool_name("a", "x.y"), "a: x.y".to_string()),
            (tool_name("a", "z"), "a: z".to_string()),
            (tool_name("a", "x_y"), "a: x_y".to_string()),
        ];
        let (name, first, second) = first_collision(claims).unwrap();
        assert_eq!(name, "a__x_y");
        assert_eq!((first.as_str(), second.as_str()), ("a: x.y", "a: x_y"));
    }
}
