//! The prompt text of DAG mode: planner, step query, analyser, answer trace, router.
//! Tests recognise each kind of request by the first line of its system prompt.

/// The planner's system prompt.
pub const PLANNER_SYSTEM: &str = "You are the planner of a multi-step agent. Break the user's \
goal into a small graph of concrete, actionable steps that separate agents will carry out.
- Each step has a short unique id, a task of 1 to 3 sentences in the language of the goal, the \
ids of the steps whose results it needs (`dependencies`), an optional `tool_hint` (only a tool \
from the list) and an optional `model_hint` (only a role from the list, null when in doubt).
- Keep independent work in separate steps without dependencies so they can run in parallel; \
merge trivially related work into one step. 2 to 4 steps for a simple goal, more only when needed.
- The dependencies must not form a cycle, and every id they name must be a step of the plan.
- Never copy large texts into a task: later steps receive the results of their dependencies.";

/// The analyser's system prompt.
pub const ANALYSER_SYSTEM: &str = "You are the analyser of a multi-step agent. Judge whether the \
steps below achieved the user's goal. `achieved` is true only if the goal is fully answered. \
`confidence` (0 to 1) is how sure you are of that verdict and of the results; lower it when \
results are missing, failed or contradict each other. `reasoning` says what is missing or wrong, \
in the language of the goal.";

/// The router's system prompt (`engine: auto`).
pub const ROUTER_SYSTEM: &str = "You are the router of an agent service. Decide which engine \
should answer the user's request: `react` (one agent working step by step: greetings, single \
questions, one lookup, one calculation, a summary) or `dag` (a planner that runs several \
independent sub-tasks in parallel: multi-part research, comparisons of several items, tasks \
with clearly separate parts). Prefer `react` when in doubt.";

/// The answer's user message header, before the rounds' results.
pub const ANSWER_INTRO: &str = "Original question:\n";

/// The re-planning note appended to the planner's user message.
pub const REPLAN_NOTE: &str =
    "Please create a revised plan that addresses the gaps identified above.";

/// Characters of a step's task quoted when the step is described to a later prompt.
pub const TASK_CHARS: usize = 1000;
