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

#[test]
fn cache_counts_are_read_in_every_protocol() {
    let openai = json!({"prompt_tokens": 100, "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 64}});
    let u = WireUsage::to_usage(Some(&read(openai)));
    assert_eq!(
        (u.prompt_tokens, u.cache_read_tokens, u.cache_write_tokens),
        (100, 64, 0)
    );
    // llama.cpp adds the part it had to compute as `cache_write_tokens`.
    let llama = json!({"prompt_tokens": 100, "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 40}});
    let u = WireUsage::to_usage(Some(&read(llama)));
    assert_eq!((u.cache_read_tokens, u.cache_write_tokens), (60, 40));
    // Anthropic's input_tokens leaves the cached parts out: the prompt is their sum.
    let anthropic = json!({"input_tokens": 10, "output_tokens": 7,
        "cache_read_input_tokens": 300, "cache_creation_input_tokens": "20"});
    let u = WireUsage::to_usage(Some(&read(anthropic)));
    assert_eq!(
        (u.prompt_tokens, u.completion_tokens, u.total_tokens),
        (330, 7, 337)
    );
    assert_eq!((u.cache_read_tokens, u.cache_write_tokens), (300, 20));
    let deepseek = json!({"prompt_tokens": 50, "prompt_cache_hit_tokens": 32});
    assert_eq!(
        WireUsage::to_usage(Some(&read(deepseek))).cache_read_tokens,
        32
    );
    let junk = json!({"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": "x"}});
    let u = WireUsage::to_usage(Some(&read(junk)));
    assert_eq!((u.prompt_tokens, u.cache_read_tokens), (5, 0));
}

#[test]
fn cache_counts_are_summed_and_survive_a_round_trip() {
    let a = Usage::call(10, 1).with_cache(4, 2);
    let sum = a + a;
    assert_eq!((sum.cache_read_tokens, sum.cache_write_tokens), (8, 4));
    // A checkpoint written before the cache counts existed reads them as 0.
    let old: Usage = serde_json::from_value(json!({"prompt_tokens": 1, "completion_tokens": 2,
        "total_tokens": 3, "llm_calls": 1}))
    .expect("old usage");
    assert_eq!(old.cache_read_tokens, 0);
}
