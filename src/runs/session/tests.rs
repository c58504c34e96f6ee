use uuid::Uuid;

use super::{conversation_of, new_images, new_query};
use crate::domain::MessageRole;
use crate::runs::PriorTurn;

fn turn(role: MessageRole, text: &str) -> PriorTurn {
    PriorTurn::text(role, text)
}

#[test]
fn a_uuid_thread_is_the_conversation_and_other_ids_are_per_tenant() {
    let id = Uuid::new_v4();
    assert_eq!(conversation_of("alice", &id.to_string()), id);
    let a = conversation_of("alice", "chat-1");
    assert_eq!(a, conversation_of("alice", "chat-1"), "stable");
    assert_ne!(a, conversation_of("bob", "chat-1"));
    assert_ne!(a, conversation_of("alice", "chat-2"));
    // The owner and the id are separated: ("ab", "c") is not ("a", "bc").
    assert_ne!(conversation_of("ab", "c"), conversation_of("a", "bc"));
}

#[test]
fn only_the_user_turns_after_the_last_answer_are_new() {
    use MessageRole::{Assistant, User};
    let turns = [
        turn(User, "first"),
        turn(Assistant, "answer"),
        turn(User, "second"),
        turn(User, " "),
        turn(User, "third"),
    ];
    let (query, earlier) = new_query(&turns, &[]).unwrap();
    assert_eq!(query, "second\n\nthird");
    let earlier: Vec<(MessageRole, &str)> = earlier
        .iter()
        .map(|t| (t.role, t.content.as_str()))
        .collect();
    assert_eq!(earlier, [(User, "first"), (Assistant, "answer")]);
    // A history that ends with the agent's answer asks nothing new.
    assert!(new_query(&turns[..2], &[]).is_none());
    assert!(new_query(&[], &[]).is_none());
    let (query, earlier) = new_query(&turns[..1], &[]).unwrap();
    assert_eq!((query.as_str(), earlier.len()), ("first", 0));
}

#[test]
fn stored_questions_are_never_asked_again() {
    use MessageRole::{Assistant, User};
    let stored = ["first\n\nContext:\n- page: a".to_string()];
    // The client never saw the answer (its stream dropped) and asks again after its question.
    let turns = [turn(User, "first"), turn(User, "second")];
    let (query, _) = new_query(&turns, &stored).unwrap();
    assert_eq!(query, "second");
    // Everything it sent is stored: nothing new.
    assert!(new_query(&turns[..1], &stored).is_none());
    // A history that diverged from the stored one still only adds what follows its last answer.
    let turns = [
        turn(User, "edited"),
        turn(Assistant, "a"),
        turn(User, "next"),
    ];
    assert_eq!(new_query(&turns, &stored).unwrap().0, "next");
}

#[test]
fn the_new_turns_images_are_the_querys_and_an_image_alone_is_a_turn() {
    let mut turns = vec![
        turn(MessageRole::User, "what is this?"),
        turn(MessageRole::Assistant, "a cat"),
        turn(MessageRole::User, ""),
    ];
    turns[0].images = vec!["https://e.x/a.png".into()];
    turns[2].images = vec!["https://e.x/b.png".into()];
    let (query, earlier) = new_query(&turns, &[]).unwrap();
    assert_eq!(query, "");
    assert_eq!(earlier[0].images, ["https://e.x/a.png"]);
    assert_eq!(new_images(&turns, &[]), ["https://e.x/b.png"]);
    let stored = ["what is this?".to_string()];
    assert_eq!(new_images(&turns, &stored), ["https://e.x/b.png"]);
}
