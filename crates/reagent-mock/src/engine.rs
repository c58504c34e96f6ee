//! What the mock knows of the engine's own texts: the synthesis call's system prompt (a streamed
//! request with it is the synthesis call) and how the engine's own user messages begin (they do
//! not restart a run's count of tool results). The engine owns these texts; the mock keeps
//! copies so that it needs nothing of the server, and `tests/core/mock_provider.rs` checks the
//! copies against the engine's prompts, so a wording change fails a test instead of silently
//! breaking the count.

/// The synthesis call's system prompt (`agent::prompts::SYNTHESIS_SYSTEM`).
pub const SYNTHESIS_SYSTEM: &str = "You write the final answer for the user from an agent's execution trace. \
Present the results directly and completely, formatted in Markdown. Write the answer in plain words: \
never a tool call or JSON, even when the draft answer is one. Do not add meta-commentary such as \
\"based on the tool output\" or describe the process unless asked. Answer in the language of the original question.";

/// How the engine's notes begin: the part of each prompt before its first variable
/// (self-reflection, cycle warning, observation, interrupt, completion checklist, re-format
/// request), in that order.
pub const ENGINE_NOTES: [&str; 6] = [
    "Pause and reflect before your next step. The original goal is: \"",
    "You have called ",
    "Observation: ",
    "[USER INTERRUPT] The user sent ",
    "Before you finish, verify your answer:\n\
1. Does it fully address the original question?\n\
2. Were the key facts verified from tool results?\n\
3. Are there any contradictions in the information gathered?\n\
If something is missing, keep working with the tools. Otherwise give your final answer again.",
    "Your previous response could not be used: ",
];

/// The notes context compaction leaves in place of what it removed (`agent/context.rs`).
pub const CONTEXT_NOTES: [&str; 3] = [
    "[Context summary of ",
    " earlier messages were removed to fit the context window]",
    " long messages were truncated to fit the context window]",
];
