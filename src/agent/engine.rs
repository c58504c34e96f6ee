//! placeholder, being written
pub struct AgentConfig;
pub struct AgentResult;
pub struct ReActAgent;
pub struct RunHandles;
pub struct RunInput;
pub struct StepRecord;
