use serde_json::json;

use super::entry::calls_text;
use crate::eval::report::{Summary, TaskResult};

#[test]
fn an_entrys_calls_read_as_one_line_per_reply_and_turn() {
    let turns = vec![
        vec![
            json!({"calls": [
                {"call_id": "a", "name": "cd", "arguments": "{\"folder\":\"document\"}"},
                {"call_id": "b", "name": "ls", "arguments": "{}"}
            ]}),
            json!({"text": "Done."}),
        ],
        vec![json!({"text": ""})],
    ];
    assert_eq!(
        calls_text(&turns),
        r#"cd({"folder":"document"}) ls({}); "Done." | """#
    );
}

#[test]
fn bfcl_results_are_scored_per_category_in_the_order_they_ran() {
    let result = |category: &str, correct: bool| {
        let mut r = TaskResult::failed("x", String::new());
        r.category = Some(category.into());
        r.correct = correct;
        r
    };
    let results = [
        result("simple_python", true),
        result("multiple", false),
        result("simple_python", false),
        result("simple_python", true),
    ];
    let summary = Summary::of(&results, std::time::Duration::ZERO);
    let scores: Vec<_> = summary
        .categories
        .iter()
        .map(|c| (c.category.as_str(), c.correct, c.tasks))
        .collect();
    assert_eq!(scores, [("simple_python", 2, 3), ("multiple", 0, 1)]);
    assert!((summary.categories[0].accuracy - 2.0 / 3.0).abs() < 1e-9);
    assert_eq!(summary.first_result_right, None, "a task file's count only");
}
