//! placeholder (helper B)
use serde_json::Value;
/// Finds one JSON object in free text (SPEC §5.2).
pub fn extract_json(_text: &str) -> Option<Value> {
    None
}
