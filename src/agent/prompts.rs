//! Every piece of prompt text the engine sends, in one place, so wording changes are reviewed
//! together and tests can refer to the same constants.

use crate::llm::ToolDefinition;

/// Default role description when the conversation sets no system prompt.
pub const DEFAULT_ROLE: &str = "You are a helpful assistant that solves the user's request step by step, using tools when they help.";

/// System prompt for native function calling: the tools travel in the `tools` parameter.
pub fn native_system_prompt(role: &str) -> String {
    format!(
        "{role}\n\nUse the provided tools when you need information or actions you cannot produce yourself. \
         Call several tools in one response when they are independent. When you have everything \
         you need, reply without calling any tool: that reply is your final answer."
    )
}

/// System prompt for JSON mode: tools are described inline and the reply protocol is fixed. A
/// call is always written in a list: Qwen2.5-Coder-0.5B, offered a single-call form beside it,
/// wrote a single call for every request that needed several (BENCHMARKS.md, "BFCL"), and
/// filled that form's free-text `reasoning` with made-up observations.
pub fn json_system_prompt(role: &str, tools: &[ToolDefinition]) -> String {
    let mut catalog = String::new();
    for t in tools {
        catalog.push_str(&format!(
            "- {}: {}\n  arguments (JSON Schema): {}\n",
            t.name, t.description, t.parameters
        ));
    }
    if catalog.is_empty() {
        catalog.push_str("(no tools are available: answer directly)\n");
    }
    format!(
        "{role}\n\nYou can use these tools:\n{catalog}\n\
         Reply with exactly ONE JSON object and nothing else, in one of these two forms:\n\
         {{\"type\": \"tool_call\", \"calls\": [{{\"tool_name\": \"<tool>\", \"tool_args\": {{...}}}}, ...]}}\n\
         {{\"type\": \"final_answer\", \"answer\": \"<your answer>\"}}\n\
         \"calls\" lists one call or several. After each tool call you will receive the result as a message \
         starting with \"Observation:\"."
    )
}

/// Sent after a JSON-mode reply that could not be parsed: what was wrong
/// ([`super::action::action_problem`]) and the valid tool names. No example: a small model
/// copies one back as its next reply.
pub fn reformat_request(problem: &str, tools: &[String]) -> String {
    let names = if tools.is_empty() {
        "(none)".to_string()
    } else {
        tools.join(", ")
    };
    format!("Your previous response could not be used: {problem}. Valid tool names: {names}. Reply again with exactly one JSON object and nothing else, in one of the two forms the system prompt gives.")
}

/// What starts every JSON-mode observation.
pub const OBSERVATION_LABEL: &str = "Observation:";

/// A JSON-mode observation, appended as a user message.
pub fn observation(text: &str) -> String {
    format!("{OBSERVATION_LABEL} {text}")
}

/// A JSON-mode answer without the observation label at its start, which small models copy
/// from the messages before it ("Observation: 391"): the label is the loop's, not the answer's.
pub fn unlabelled(answer: &str) -> &str {
    match answer.trim_start().strip_prefix(OBSERVATION_LABEL) {
        Some(rest) => rest.trim_start(),
        None => answer,
    }
}

/// What the LLM sees instead of an artifact's content.
pub fn artifact_notice(name: &str) -> String {
    format!("[Artifact generated: {name}] The content is rendered as a preview in the UI and available for download. Do not reproduce its source in your answer.")
}

/// The observation of a call not made because its start could not be recorded first (a call
/// that must not run twice is made only once a resumed run would know it may have started).
pub fn not_recorded(reason: &str) -> String {
    format!("Error: the tool was not called: its start could not be recorded ({reason}).")
}

/// Starts what a call whose arguments were too large keeps instead of them (the executor
/// answers such a call with [`arguments_too_large`] instead of a JSON error).
pub const ARGUMENTS_OMITTED: &str = "[arguments omitted: ";

/// What a call keeps of arguments over the size limit: their size, nothing of them.
pub fn omitted_arguments(bytes: usize, max: usize) -> String {
    format!("{ARGUMENTS_OMITTED}{bytes} bytes, more than the {max} a tool call may send]")
}

/// The observation of a call whose arguments were over the size limit (`kept` is what
/// [`omitted_arguments`] made of them).
pub fn arguments_too_large(tool: &str, kept: &str) -> String {
    let size = kept
        .strip_prefix(ARGUMENTS_OMITTED)
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or(kept);
    format!(
        "Error: the call to '{}' was not run: its arguments were {size}. Send smaller \
         arguments (refer to data instead of writing it out).",
        crate::domain::text::clip(tool, crate::domain::text::NAME_CHARS),
    )
}

/// After the results of a reply whose calls past a limit were not run.
pub fn calls_not_run(asked: usize, ran: usize, per_reply: u32) -> String {
    format!(
        "[Tool call limit] Your last reply asked for {asked} tool calls; only the first {ran} \
         were run (at most {per_reply} run per reply). The other {} were not run: ask again only \
         for those you still need.",
        asked - ran.min(asked)
    )
}

/// The result of a call not run because the call before it in the reply repeated the run's
/// last call and got the same result: the run stopped calling tools there.
pub const NOT_RUN_AFTER_REPEAT: &str = "Not run: the call before it repeated the previous call and returned the same result, so no more tools were called.";

pub fn unknown_tool(name: &str, available: &[String]) -> String {
    format!(
        "Error: Unknown tool '{}'. Available tools: {}",
        crate::domain::text::clip(name, crate::domain::text::NAME_CHARS),
        if available.is_empty() {
            "(none)".to_string()
        } else {
            available.join(", ")
        }
    )
}

/// Self-reflection, quoting the original goal.
pub fn reflection(query: &str) -> String {
    format!(
        "Pause and reflect before your next step. The original goal is: \"{query}\"\n\
         - Are you still on track for that goal?\n\
         - Have you been repeating similar actions or going in circles?\n\
         - What is the most direct next step to finish?\n\
         - Do you already have enough to give the final answer now?"
    )
}

/// Cycle warning, exact text.
pub fn cycle_warning(tool: &str, cycle: super::safeguards::Cycle) -> String {
    use super::safeguards::Cycle;
    match cycle {
        Cycle::SameResult(times) => format!("You have called {tool} with identical arguments {times} times and received the same result. Please try a different approach or tool."),
        Cycle::Repeated(times) => format!("You have called {tool} with identical arguments {times} times in a row. Calling it again will not tell you more: use the results you have, try a different approach, or give your final answer."),
    }
}

/// Completion checklist.
pub const COMPLETION_CHECK: &str = "Before you finish, verify your answer:\n\
1. Does it fully address the original question?\n\
2. Were the key facts verified from tool results?\n\
3. Are there any contradictions in the information gathered?\n\
If something is missing, keep working with the tools. Otherwise give your final answer again.";

/// One pinned message for all interrupts of one drain.
pub fn interrupt_message(contents: &[String]) -> String {
    let mut s = String::from("[USER INTERRUPT] The user sent ");
    if contents.len() == 1 {
        s.push_str("a follow-up message while you were working. Take it into account:\n");
    } else {
        s.push_str(&format!(
            "{} follow-up messages while you were working. Take all of them into account:\n",
            contents.len()
        ));
    }
    for (i, c) in contents.iter().enumerate() {
        s.push_str(&format!("{}. {}\n", i + 1, c));
    }
    s
}

/// Synthesis system prompt.
pub const SYNTHESIS_SYSTEM: &str = "You write the final answer for the user from an agent's execution trace. \
Present the results directly and completely, formatted in Markdown. Write the answer in plain words: \
never a tool call or JSON, even when the draft answer is one. Do not add meta-commentary such as \
\"based on the tool output\" or describe the process unless asked. Answer in the language of the original question.";

/// The synthesis call's system prompt for the tool-selection catalog call.
pub const SELECTION_SYSTEM: &str = "You select the tools an agent needs. From the catalog, choose the tools most relevant to the user's request. Reply with a JSON object {\"tools\": [\"name\", ...]} listing at most the allowed number of tool names, most relevant first.";
