//! `${VAR}` expansion (docs/configuration.md) in the string values that carry secrets: `[[tools.http]]`
//! headers, `[[mcp]]` env and headers, `[[hooks]]` URLs. An unset variable is a start-up error
//! naming it and the key; `$$` is a literal `$`. The expanded values are only ever held in the
//! loaded [`Config`](super::Config), whose summaries print keys, never these values.

use std::collections::{BTreeMap, HashMap};

use super::ConfigError;

/// `raw` with every `${NAME}` replaced by `env[NAME]`.
pub fn expand(key: &str, raw: &str, env: &HashMap<String, String>) -> Result<String, ConfigError> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("$$") {
            out.push('$');
            rest = after;
        } else if let Some(body) = tail.strip_prefix("${") {
            let end = body.find('}').ok_or_else(|| {
                ConfigError::invalid(key, "unterminated ${ (write $$ for a literal $)")
            })?;
            let name = &body[..end];
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(ConfigError::invalid(
                    key,
                    format!("invalid variable name {name:?} in ${{...}}"),
                ));
            }
            let value = env.get(name).ok_or_else(|| {
                ConfigError::invalid(key, format!("environment variable {name} is not set"))
            })?;
            out.push_str(value);
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The names of every `${NAME}` in `text` (a configuration file): variables the user chose.
pub(super) fn referenced(text: &str) -> Vec<String> {
    text.split("${")
        .skip(1)
        .filter_map(|part| {
            part.split_once('}')
                .map(|(name, _)| name.trim().to_string())
        })
        .collect()
}

/// Expands every value of a map in place; `prefix` names the map (`mcp[0].env`).
pub fn expand_map(
    prefix: &str,
    map: &mut BTreeMap<String, String>,
    env: &HashMap<String, String>,
) -> Result<(), ConfigError> {
    for (name, value) in map.iter_mut() {
        *value = expand(&format!("{prefix}.{name}"), value, env)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> HashMap<String, String> {
        HashMap::from([("TOKEN".to_string(), "s3cr3t".to_string())])
    }

    #[test]
    fn replaces_set_variables_and_keeps_plain_text() {
        let got = expand("k", "Bearer ${TOKEN}; $5 $$x", &env()).unwrap();
        assert_eq!(got, "Bearer s3cr3t; $5 $x");
    }

    #[test]
    fn an_unset_variable_names_itself_and_the_key() {
        let e = expand("mcp[0].env.API", "${NOPE}", &env())
            .unwrap_err()
            .to_string();
        assert!(e.contains("NOPE") && e.contains("mcp[0].env.API"), "{e}");
        assert!(!e.contains("s3cr3t"));
    }

    #[test]
    fn malformed_references_are_errors() {
        assert!(expand("k", "${TOKEN", &env()).is_err());
        assert!(expand("k", "${A-B}", &env()).is_err());
    }
}
