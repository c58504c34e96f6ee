use serde_json::json;

use super::*;

fn read(usage: serde_json::Value) -> WireUsage {
    serde_json::from_value(usage).expect("usage never fails to read")
}

#[test]
fn counts_are_read_leniently() {
    let u = read(json!({"prompt_tokens": 12.9, "completion_tokens": "7"}));
    assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(12), Some(7)));
    let u = read(json!({"prompt_tokens": -3, "completion_tokens": " 4.5 "}));
    assert_eq!((u.prompt_tokens, u.completion_tokens), (None, Some(4)));
    let u = read(json!({"prompt_tokens": "lots", "completion_tokens": [1]}));
    assert_eq!(u, WireUsage::default());
    let u = read(json!({"prompt_tokens": {"n": 1}, "completion_tokens": null}));
    assert_eq!(u, WireUsage::default());
    assert_eq!(read(json!("nonsense")), WireUsage::default());
    assert_eq!(read(json!(42)), WireUsage::default());
    let u = read(json!({"prompt_tokens": 1e300, "completion_tokens": -0.5}));
    assert_eq!(
        (u.prompt_tokens, u.completion_tokens),
        (Some(u64::MAX), None)
    );
}

#[test]
fn sums_saturate_at_what_the_databases_store() {
    let one = Usage::call(u64::MAX - 1, u64::MAX);
    assert_eq!(one.prompt_tokens, MAX_COUNT);
    assert_eq!(one.total_tokens, MAX_COUNT);
    let sum = one + Usage::call(5, 5) + one;
    assert_eq!(sum.prompt_tokens, MAX_COUNT);
    assert_eq!(sum.completion_tokens, MAX_COUNT);
    assert_eq!(sum.total_tokens, MAX_COUNT);
    assert_eq!(sum.llm_calls, 3);
    assert_eq!(Usage::call(3, 4).total_tokens, 7);
}
