//! Per-task results and the summary, as a text table or as JSON.

use std::time::Duration;

use serde::Serialize;

/// One task's result.
#[derive(Clone, Debug, Serialize)]
pub struct TaskResult {
    pub id: String,
    pub correct: bool,
    /// The run's final status, or `error` when the service refused the task or the stream broke.
    pub status: String,
    pub llm_calls: u64,
    pub tool_calls: u64,
    pub tokens: u64,
    pub time_s: f64,
    /// `tools_required` that did not run without an error.
    pub missing_tools: Vec<String>,
    pub answer: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether the run's first tool result (the first call that ended without an error) meets
    /// the task's `expect`; `None` when no tool returned or for BFCL entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_result_correct: Option<bool>,
    /// That first call, as `tool(arguments)`: what the model asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_call: Option<String>,
    /// A BFCL entry's category.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Why BFCL's checker did not accept a BFCL entry's calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checker: Option<String>,
}

impl TaskResult {
    /// A task that produced no verdict: wrong, with `error` (when not empty) as the reason.
    pub fn failed(id: &str, error: String) -> TaskResult {
        TaskResult {
            id: id.to_string(),
            correct: false,
            status: "error".into(),
            llm_calls: 0,
            tool_calls: 0,
            tokens: 0,
            time_s: 0.0,
            missing_tools: Vec::new(),
            answer: String::new(),
            error: (!error.is_empty()).then_some(error),
            first_result_correct: None,
            first_call: None,
            category: None,
            checker: None,
        }
    }
}

/// One BFCL category's score.
#[derive(Clone, Debug, Serialize)]
pub struct CategoryScore {
    pub category: String,
    pub tasks: usize,
    pub correct: usize,
    pub accuracy: f64,
}

/// Accuracy and medians over every task.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub tasks: usize,
    pub correct: usize,
    /// `correct / tasks`, 0 to 1.
    pub accuracy: f64,
    pub median_llm_calls: f64,
    pub median_tool_calls: f64,
    pub median_tokens: f64,
    pub median_time_s: f64,
    /// Wall time of the whole eval.
    pub wall_s: f64,
    /// Tasks whose first tool result met `expect`, and how many of those were answered right
    /// (a task file's runs; absent for BFCL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_result_right: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_result_kept: Option<usize>,
    /// Answers that are a tool call written as text (the dump guard's shapes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_dumps: Option<usize>,
    /// Per BFCL category, in the order they ran.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<CategoryScore>,
}

/// What `--json` prints.
#[derive(Serialize)]
pub struct Report<'a> {
    pub summary: &'a Summary,
    pub tasks: &'a [TaskResult],
}

impl Summary {
    pub fn of(results: &[TaskResult], wall: Duration) -> Summary {
        let correct = results.iter().filter(|r| r.correct).count();
        let median_of = |f: &dyn Fn(&TaskResult) -> f64| median(results.iter().map(f).collect());
        Summary {
            tasks: results.len(),
            correct,
            accuracy: match results.len() {
                0 => 0.0,
                n => correct as f64 / n as f64,
            },
            median_llm_calls: median_of(&|r| r.llm_calls as f64),
            median_tool_calls: median_of(&|r| r.tool_calls as f64),
            median_tokens: median_of(&|r| r.tokens as f64),
            median_time_s: median_of(&|r| r.time_s),
            wall_s: wall.as_secs_f64(),
            first_result_right: None,
            first_result_kept: None,
            call_dumps: None,
            categories: categories(results),
        }
    }

    /// The summary of a task file's run: with the first-result and call-dump counts.
    pub fn of_tasks(results: &[TaskResult], wall: Duration) -> Summary {
        let right = || {
            results
                .iter()
                .filter(|r| r.first_result_correct == Some(true))
        };
        Summary {
            first_result_right: Some(right().count()),
            first_result_kept: Some(right().filter(|r| r.correct).count()),
            call_dumps: Some(
                results
                    .iter()
                    .filter(|r| crate::agent::synthesis::is_call_dump(&r.answer))
                    .count(),
            ),
            ..Summary::of(results, wall)
        }
    }
}

/// The BFCL categories' scores, in their first appearance's order.
fn categories(results: &[TaskResult]) -> Vec<CategoryScore> {
    let mut scores: Vec<CategoryScore> = Vec::new();
    for r in results {
        let Some(category) = &r.category else {
            continue;
        };
        let at = match scores.iter().position(|s| &s.category == category) {
            Some(at) => at,
            None => {
                scores.push(CategoryScore {
                    category: category.clone(),
                    tasks: 0,
                    correct: 0,
                    accuracy: 0.0,
                });
                scores.len() - 1
            }
        };
        let s = &mut scores[at];
        s.tasks += 1;
        s.correct += usize::from(r.correct);
        s.accuracy = s.correct as f64 / s.tasks as f64;
    }
    scores
}

/// The middle value (the mean of the two middle ones for an even count); 0 for none.
pub fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    match values.len() % 2 {
        1 => values[mid],
        _ => (values[mid - 1] + values[mid]) / 2.0,
    }
}

/// The per-task table, then the summary line.
pub fn table(results: &[TaskResult], summary: &Summary) -> String {
    let ids: Vec<String> = results.iter().map(|r| printable(&r.id)).collect();
    let id_width = ids
        .iter()
        .map(|id| id.chars().count())
        .max()
        .unwrap_or(2)
        .max(4);
    let mut out = format!(
        "{:<id_width$}  {:<7}  {:<14}  {:>9}  {:>10}  {:>7}  {:>7}  answer\n",
        "task", "correct", "status", "llm_calls", "tool_calls", "tokens", "time_s"
    );
    for (r, id) in results.iter().zip(&ids) {
        let mut note = one_line(&r.answer, 60);
        if let Some(e) = &r.error {
            note = format!("error: {}", one_line(e, 60));
        } else if !r.missing_tools.is_empty() {
            note = format!("(did not run: {}) {note}", r.missing_tools.join(", "));
        }
        let note = printable(&note);
        out.push_str(&format!(
            "{:<id_width$}  {:<7}  {:<14}  {:>9}  {:>10}  {:>7}  {:>7.1}  {note}\n",
            id,
            if r.correct { "yes" } else { "no" },
            printable(&r.status),
            r.llm_calls,
            r.tool_calls,
            r.tokens,
            r.time_s,
        ));
    }
    out.push_str(&format!(
        "\naccuracy {}/{} = {:.1}%  median: llm_calls {}, tool_calls {}, tokens {}, time {:.1} s  \
         (wall {:.1} s)\n",
        summary.correct,
        summary.tasks,
        summary.accuracy * 100.0,
        summary.median_llm_calls,
        summary.median_tool_calls,
        summary.median_tokens,
        summary.median_time_s,
        summary.wall_s,
    ));
    if let (Some(right), Some(kept), Some(dumps)) = (
        summary.first_result_right,
        summary.first_result_kept,
        summary.call_dumps,
    ) {
        out.push_str(&format!(
            "first tool result right in {right}, answered right in {kept} of those; \
             answers that are a tool call: {dumps}\n"
        ));
    }
    for c in &summary.categories {
        out.push_str(&format!(
            "{:<id_width$}  {}/{} = {:.1}%\n",
            c.category,
            c.correct,
            c.tasks,
            c.accuracy * 100.0
        ));
    }
    out
}

/// `text` with its control characters (escape sequences a terminal would obey: task ids and
/// answers come from files and models) written as `\u{1b}`.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c.is_control() {
            true => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            false => out.push(c),
        }
    }
    out
}

/// `text` on one line, cut to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}
