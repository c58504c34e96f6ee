//! Tool names as small models write them. A name that is not a tool of the run still names one
//! when it is, unambiguously, the same name but for case or `-`/`_` (`Current-Time` for
//! `current_time`), or the bare name of exactly one MCP tool (`lookup` for `server__lookup`).
//! A name that is one of those followed by `Arguments` (the title of the tool's argument schema,
//! which small models copy as the name: `calculatorArguments`) names that tool too. Two tools
//! that fit equally well make the name unknown: guessing could run the wrong one.

/// `name` in the form names are compared in: lower case, `-` read as `_`.
fn normal(name: &str) -> String {
    name.trim()
        .chars()
        .map(|c| {
            if c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

/// The part of an MCP tool's name after its server (`server__tool`), if it has one.
fn bare(name: &str) -> Option<&str> {
    name.split_once("__").map(|(_, tool)| tool)
}

/// The one name of `names` that `wanted` is exactly, or differs from only in case or `-`/`_`,
/// or is the bare MCP name of, or is one of these followed by `Arguments` (a schema's title);
/// `None` when none is, or when several are.
pub fn resolve<'a>(names: &[&'a str], wanted: &str) -> Option<&'a str> {
    if let Some(found) = resolve_written(names, wanted) {
        return Some(found);
    }
    let title = wanted.trim().strip_suffix("Arguments")?;
    resolve_written(names, title)
}

/// [`resolve`] without the schema-title rule.
fn resolve_written<'a>(names: &[&'a str], wanted: &str) -> Option<&'a str> {
    if let Some(exact) = names.iter().find(|n| **n == wanted) {
        return Some(exact);
    }
    let wanted = normal(wanted);
    let full = names.iter().filter(|n| normal(n) == wanted);
    if let Some(found) = only(full) {
        return found;
    }
    only(
        names
            .iter()
            .filter(|n| bare(n).is_some_and(|b| normal(b) == wanted)),
    )
    .flatten()
}

/// `None` when `it` is empty; `Some(None)` when it holds several (ambiguous).
fn only<'a, 'b>(mut it: impl Iterator<Item = &'b &'a str>) -> Option<Option<&'a str>>
where
    'a: 'b,
{
    let first = it.next()?;
    Some(it.next().is_none().then_some(*first))
}

#[cfg(test)]
mod tests;
