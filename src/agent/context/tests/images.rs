//! Images in the context guard: a fixed estimate each, and old ones replaced by their text.

use super::*;
use crate::llm::ImagePart;

fn stored(id: &str) -> ImagePart {
    ImagePart {
        url: "data:image/png;base64,iVBORw0KGgo=".into(),
        artifact: Some(id.into()),
    }
}

fn remote(url: &str) -> ImagePart {
    ImagePart {
        url: url.into(),
        artifact: None,
    }
}

#[test]
fn each_image_counts_a_fixed_thousand_tokens() {
    let plain = Message::user("what is this?");
    let with = plain
        .clone()
        .with_images(vec![stored("a1"), remote("https://e.x/b.png")]);
    assert_eq!(
        estimate_message_tokens(&[with]),
        estimate_message_tokens(&[plain]) + 2 * 1_000
    );
}

#[tokio::test]
async fn compaction_replaces_old_images_by_their_artifact_id_or_url() {
    let pad = "y".repeat(600);
    let mut input = vec![
        Message::system("You are an agent."),
        Message::user("QUERY: what is on this picture?")
            .with_images(vec![stored("art-1")])
            .pinned(),
        Message::user(format!("an earlier turn {pad}"))
            .with_images(vec![remote("https://e.x/old.png")]),
        Message::assistant(format!("an earlier answer {pad}")),
    ];
    input.push(Message::user("and this one?").with_images(vec![stored("art-2")]));
    input.push(Message::assistant("a recent answer"));
    let guard = ContextGuard::new(2_500).with_keep_recent(2);
    assert!(guard.over_budget(&input, &[]));
    let llm = ScriptedLlm::native();
    llm.text("SUMMARY-TEXT");

    let c = guard.compact(&llm, &input, &[]).await;

    let out = &c.messages;
    assert!(out[1].images.is_empty(), "the old pinned query's image");
    assert_eq!(
        out[1].content,
        "QUERY: what is on this picture?\n[image: art-1]"
    );
    let prompt: String = llm
        .chat_requests()
        .iter()
        .flat_map(|r| r.messages.iter().map(|m| m.content.clone()))
        .collect();
    assert!(prompt.contains("[image: https://e.x/old.png]"), "{prompt}");
    assert!(out
        .iter()
        .all(|m| m.images.is_empty() || m.content == "and this one?"));
    let recent = out.iter().find(|m| m.content == "and this one?").unwrap();
    assert_eq!(
        recent.images,
        vec![stored("art-2")],
        "the tail keeps its image"
    );
    assert!(c.event.tokens_after < c.event.tokens_before);
}
