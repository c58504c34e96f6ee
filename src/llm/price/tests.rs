use super::*;

#[test]
fn a_call_costs_its_tokens_at_the_price() {
    let price = Price {
        input: 2.5,
        output: 10.0,
        ..Price::default()
    };
    let usage = priced(Usage::call(1_000_000, 200_000), Some(&price));
    assert_eq!(usage.cost_usd, Cost::from_nanos(4_500_000_000));
    assert_eq!(usage.unpriced_calls, 0);
    let json = serde_json::to_value(usage).unwrap();
    assert_eq!(json["cost_usd"], serde_json::json!(4.5));
}

#[test]
fn a_tiny_call_never_rounds_to_free_and_no_price_is_marked() {
    let price = Price {
        input: 0.01,
        ..Price::default()
    };
    assert_eq!(price.cost(1, 0, 0, 0), Cost::from_nanos(10));
    let unknown = priced(Usage::call(1_000, 1_000), None);
    assert_eq!((unknown.cost_usd, unknown.unpriced_calls), (Cost::ZERO, 1));
    let sum = unknown + priced(Usage::call(1, 1), Some(&price));
    assert_eq!((sum.unpriced_calls, sum.llm_calls), (1, 2));
}

#[test]
fn the_worst_case_is_the_prompt_and_the_whole_output() {
    let price = Price {
        input: 1.0,
        output: 4.0,
        ..Price::default()
    };
    assert_eq!(price.worst_case(1_000, 500), Cost::from_usd(0.003));
}

#[test]
fn invalid_fields_are_named() {
    let bad = Price {
        output: f64::NAN,
        ..Price::default()
    };
    assert_eq!(bad.invalid_field().map(|f| f.0), Some("output"));
    let neg = Price {
        cache_read: -1.0,
        ..Price::default()
    };
    assert_eq!(neg.invalid_field().map(|f| f.0), Some("cache_read"));
    assert_eq!(Price::default().invalid_field(), None);
}

#[test]
fn cached_prompt_tokens_are_priced_at_their_own_rates() {
    let price = Price {
        input: 3.0,
        output: 15.0,
        cache_read: 0.3,
        cache_write: 3.75,
    };
    // 10,000 prompt tokens: 6,000 read from the cache, 1,000 written to it, 3,000 plain.
    let usage = priced(
        Usage::call(10_000, 100).with_cache(6_000, 1_000),
        Some(&price),
    );
    let expected = 3_000.0 * 3.0 + 6_000.0 * 0.3 + 1_000.0 * 3.75 + 100.0 * 15.0;
    assert_eq!(usage.cost_usd, Cost::from_usd(expected / 1e6));
}
