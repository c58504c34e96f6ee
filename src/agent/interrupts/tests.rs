use super::*;

#[test]
fn push_drain_in_order() {
    let q = InterruptQueue::new();
    q.push("a").unwrap();
    q.push("b").unwrap();
    let got: Vec<_> = q.drain().into_iter().map(|i| i.content).collect();
    assert_eq!(got, ["a", "b"]);
    assert!(q.drain().is_empty());
}

#[test]
fn recall_only_until_drained() {
    let q = InterruptQueue::new();
    let a = q.push("a").unwrap();
    let b = q.push("b").unwrap();
    assert_eq!(q.recall(a.id), Recall::Recalled);
    assert_eq!(q.recall(a.id), Recall::NotPending);
    assert_eq!(q.drain(), vec![b.clone()]);
    assert_eq!(q.recall(b.id), Recall::NotPending);
}

#[test]
fn close_returns_leftovers_and_refuses_pushes() {
    let q = InterruptQueue::new();
    let a = q.push("late").unwrap();
    assert_eq!(q.close(), vec![a]);
    assert_eq!(q.push("later"), Err(QueueClosed));
    assert!(!q.is_open());
}

#[test]
fn concurrent_push_and_close_lose_nothing() {
    use std::sync::Arc;
    for _ in 0..200 {
        let q = Arc::new(InterruptQueue::new());
        let pusher = {
            let q = q.clone();
            std::thread::spawn(move || (0..50).filter(|i| q.push(i.to_string()).is_ok()).count())
        };
        let mut seen = q.drain().len();
        seen += q.close().len();
        let accepted = pusher.join().unwrap();
        assert_eq!(seen, accepted);
    }
}
