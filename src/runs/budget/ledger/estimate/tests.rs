use super::*;

#[test]
fn reported_counts_stay_and_missing_ones_are_estimated_and_marked() {
    let reply = Written { bytes: 41 };
    let reported = Usage::call(120, 9);
    assert_eq!(reported_or_estimated(reported, 500, reply), reported);
    let none = reported_or_estimated(Usage::call(0, 0), 500, reply);
    assert_eq!(
        (
            none.prompt_tokens,
            none.completion_tokens,
            none.total_tokens
        ),
        (500, 11, 511)
    );
    assert_eq!((none.llm_calls, none.estimated_calls), (1, 1));
    let half = reported_or_estimated(Usage::call(120, 0), 500, reply);
    assert_eq!((half.prompt_tokens, half.completion_tokens), (120, 11));
    assert_eq!(half.estimated_calls, 1);
    // An empty reply really has no completion tokens.
    let empty = reported_or_estimated(Usage::call(120, 0), 500, Written::default());
    assert_eq!(empty, Usage::call(120, 0));
}
