//! What JSON-mode loop calls ask the provider for ([`response_format`]), and the way back when
//! a server refuses the action's schema (a tool schema its grammar converter cannot take): the
//! call is made again with `json_object`, and so is every later call of the run.

use super::*;

impl LoopRun<'_> {
    /// The run's JSON-mode format was the action's schema: it becomes `json_object` (or none,
    /// without `json_mode`) and the refused call is to be made again. False otherwise.
    pub(super) fn schema_refused(&mut self, error: &LlmError) -> bool {
        let refused = matches!(error, LlmError::Status { status: 400, .. })
            && matches!(self.json_format, Some(ResponseFormat::JsonSchema { .. }));
        if refused {
            tracing::warn!(error = %error, "the provider refused the action's JSON schema; asking for JSON only");
            let abilities = self.llm.abilities();
            self.json_format = abilities.json_mode.then_some(ResponseFormat::JsonObject);
        }
        refused
    }
}
