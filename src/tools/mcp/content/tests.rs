use serde_json::json;

use super::*;

#[test]
fn text_parts_are_joined() {
    let r = json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]});
    assert_eq!(map_result("t", &r).unwrap().content, "a\nb");
}

#[test]
fn is_error_is_an_error_observation() {
    let r = json!({"content": [{"type": "text", "text": "boom"}], "isError": true});
    assert_eq!(map_result("t", &r), Err(ToolError::Failed("boom".into())));
}

#[test]
fn images_become_artifacts_with_their_mime_type() {
    let r = json!({"content": [{"type": "image", "data": "iVBORw==", "mimeType": "image/png"}]});
    let out = map_result("s__img", &r).unwrap();
    assert_eq!(out.artifacts.len(), 1);
    assert_eq!(out.artifacts[0].mime_type, "image/png");
    assert_eq!(out.artifacts[0].data, vec![0x89, b'P', b'N', b'G']);
}

#[test]
fn embedded_text_resources_become_artifacts() {
    let r = json!({"content": [{"type": "resource",
        "resource": {"uri": "file:///a/notes.md", "mimeType": "text/markdown", "text": "# hi"}}]});
    let out = map_result("t", &r).unwrap();
    assert_eq!(out.artifacts[0].mime_type, "text/markdown");
    assert_eq!(out.artifacts[0].data, b"# hi");
}

#[test]
fn structured_content_is_the_observation_without_text() {
    let r = json!({"content": [], "structuredContent": {"sum": 3}});
    assert_eq!(map_result("t", &r).unwrap().content, r#"{"sum":3}"#);
}

#[test]
fn malformed_parts_are_skipped_and_huge_text_is_cut() {
    let r = json!({"content": [{"type": "image", "data": "%%%"}, {"type": 7}, "nonsense",
        {"type": "text", "text": "x".repeat(MAX_OBSERVATION_BYTES + 10)}]});
    let out = map_result("t", &r).unwrap();
    assert!(out.artifacts.is_empty());
    assert!(out.content.len() < MAX_OBSERVATION_BYTES + 100);
    assert!(out.content.ends_with("bytes]"));
}
