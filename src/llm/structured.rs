//! `structured_llm_call`: the one way to get schema-conforming JSON out of any model.
//!
//! A degradation chain picks the strongest mechanism the model's [`Abilities`] allow and falls
//! back level by level, so that a local text-only model can take part in the same scenarios as a
//! model with native function calling:
//!
//! 1. **Native function call** (`tool_call`): one function whose parameters are the schema,
//!    forced with `tool_choice` when the model supports it. No retry.
//! 2. **JSON mode** (`json_mode`): `response_format = json_object`; one re-format retry.
//! 3. **Plain text** (always): schema in the prompt, [`extract_json`], then the caller's regex
//!    fallback; one re-format retry.
//!
//! Anything that stops a level — an [`LlmError`], no JSON object in the reply, or the caller's
//! `parse_fn` rejecting it — moves on to the next level. Worst case 5 calls. Every call counts in
//! `llm_calls` and `usage`, successful or not, because the run's usage must include
//! structured retries.

use serde_json::Value;

use crate::domain::text::clip;

use super::{
    extract_json, ChatRequest, ChatResponse, Llm, Message, ResponseFormat, Role, ToolChoice,
    ToolDefinition, Usage,
};

/// Turns the raw JSON into the caller's domain value; an error degrades to the next level.
pub type ParseFn<'a, T> = Box<dyn Fn(&Value) -> Result<T, String> + Send + Sync + 'a>;
/// Last-chance extraction from plain text at level 3.
pub type RegexFallback<'a> = Box<dyn Fn(&str) -> Option<Value> + Send + Sync + 'a>;

/// One structured request.
pub struct StructuredCall<'a, T> {
    /// The conversation to send (system + user, typically).
    pub messages: Vec<Message>,
    /// Name of the forced function at level 1.
    pub schema_name: String,
    /// JSON Schema the value must follow.
    pub schema: Value,
    pub parse_fn: ParseFn<'a, T>,
    /// Returned (level 0) when every level fails, instead of an error.
    pub default_value: Option<T>,
    pub regex_fallback: Option<RegexFallback<'a>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StructuredResult<T> {
    pub value: T,
    /// The parsed JSON before `parse_fn` (Null when `default_value` was used).
    pub raw: Value,
    /// 1 native function call, 2 JSON mode, 3 plain text, 0 the default value.
    pub level: u8,
    pub llm_calls: u32,
    /// Summed over every attempt.
    pub usage: Usage,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StructuredError {
    #[error("no level produced a usable value after {llm_calls} LLM calls: {last_error}")]
    Exhausted {
        llm_calls: u32,
        usage: Usage,
        last_error: String,
    },
}

/// Description of the level-1 function when the schema has no top-level `description`: it tells
/// the model the function is the answer channel, not an action with side effects.
/// Characters of a failed attempt's reason that are logged and quoted back to the model.
const REASON_CHARS: usize = 500;

/// The largest reply a structured call reads, in bytes. Its values (a plan, a verdict, a
/// choice) are a few kilobytes; a larger reply fails its level unread, because reading JSON
/// into a value takes many times its size (a 5 MB plan of 100,000 steps, ~90 MB).
pub const MAX_STRUCTURED_REPLY_BYTES: usize = 1024 * 1024;

pub const FUNCTION_DESCRIPTION: &str =
    "Return your answer as the arguments of this function. Calling it has no side effect.";

/// Appended to the system prompt at level 1 when the model cannot be forced with `tool_choice`
/// (`{name}` is replaced): without it, an `auto` choice often gets a prose reply instead.
pub const CALL_FUNCTION_INSTRUCTION: &str =
    "Answer by calling the function `{name}`; do not answer in plain text.";

/// Appended to the system prompt at levels 2 and 3 (`{schema}` is replaced). Level 2 needs it
/// too: OpenAI rejects `json_object` mode unless the messages mention JSON, and the model has no
/// other way to learn the schema there.
pub const SCHEMA_INSTRUCTION: &str = "Reply with a single JSON object that follows this JSON \
     Schema. Output only the JSON object: no prose, no explanation.\nJSON Schema:\n{schema}";

/// The re-format retry of levels 2 and 3, sent as a user message after the unusable reply
/// (`{reason}` and `{schema}` are replaced).
pub const REFORMAT_PROMPT: &str = "Your previous reply could not be parsed as valid JSON \
     ({reason}). Reply again with only the JSON object, following this JSON Schema exactly, \
     with no prose and no code fences.\nJSON Schema:\n{schema}";

/// Runs the degradation chain (native schema, JSON mode, plain text) against `llm`.
///
/// Returns the first value `parse_fn` accepts; when every level fails, the `default_value`
/// (level 0, `raw = Null`) if there is one, else [`StructuredError::Exhausted`]. Both still
/// report every call made and the summed usage.
pub async fn structured_llm_call<T>(
    llm: &dyn Llm,
    call: StructuredCall<'_, T>,
) -> Result<StructuredResult<T>, StructuredError> {
    let kind = crate::telemetry::CallKind::Structured;
    crate::telemetry::with_call_kind(kind, structured_chain(llm, call)).await
}

async fn structured_chain<T>(
    llm: &dyn Llm,
    call: StructuredCall<'_, T>,
) -> Result<StructuredResult<T>, StructuredError> {
    let abilities = llm.abilities();
    let mut chain = Chain {
        llm,
        call: &call,
        llm_calls: 0,
        usage: Usage::default(),
        last_error: String::from("no level was attempted"),
        last_reason: String::new(),
    };
    let mut found = None;
    if abilities.tool_call {
        found = chain.native_level(abilities.tool_choice).await;
    }
    if found.is_none() && abilities.json_mode {
        found = chain.text_level(2).await;
    }
    if found.is_none() {
        found = chain.text_level(3).await;
    }
    let (llm_calls, usage) = (chain.llm_calls, chain.usage);
    let last_error = chain.last_error;
    match (found, call.default_value) {
        (Some((level, raw, value)), _) => Ok(StructuredResult {
            value,
            raw,
            level,
            llm_calls,
            usage,
        }),
        (None, Some(value)) => {
            tracing::debug!(llm_calls, %last_error, "structured call fell back to default value");
            Ok(StructuredResult {
                value,
                raw: Value::Null,
                level: 0,
                llm_calls,
                usage,
            })
        }
        (None, None) => Err(StructuredError::Exhausted {
            llm_calls,
            usage,
            last_error,
        }),
    }
}

/// State threaded through the levels: the counters and the reason the last attempt failed.
struct Chain<'c, 'a, T> {
    llm: &'c dyn Llm,
    call: &'c StructuredCall<'a, T>,
    llm_calls: u32,
    usage: Usage,
    /// `level N: reason` of the last failed attempt, for [`StructuredError::Exhausted`].
    last_error: String,
    /// The same reason without the level, quoted back to the model in [`REFORMAT_PROMPT`].
    last_reason: String,
}

/// A level's success: `(level, raw JSON, parsed value)`.
type Found<T> = (u8, Value, T);

impl<T> Chain<'_, '_, T> {
    /// Level 1: one forced (or, without `tool_choice`, strongly suggested) function call.
    async fn native_level(&mut self, can_force: bool) -> Option<Found<T>> {
        let name = self.call.schema_name.clone();
        let description = self
            .call
            .schema
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or(FUNCTION_DESCRIPTION)
            .to_string();
        let messages = if can_force {
            self.call.messages.clone()
        } else {
            with_system_note(
                &self.call.messages,
                &CALL_FUNCTION_INSTRUCTION.replace("{name}", &name),
            )
        };
        let request = ChatRequest {
            tools: vec![ToolDefinition {
                name: name.clone(),
                description,
                parameters: self.call.schema.clone(),
            }]
            .into(),
            tool_choice: Some(if can_force {
                ToolChoice::Function(name.clone())
            } else {
                ToolChoice::Auto
            }),
            ..ChatRequest::new(messages)
        };
        let reply = self.ask(1, request).await?;
        if let Some(big) = reply
            .tool_calls
            .iter()
            .map(|c| c.arguments.len())
            .chain([reply.content.len()])
            .find(|n| *n > MAX_STRUCTURED_REPLY_BYTES)
        {
            self.fail(1, &too_large(big));
            return None;
        }
        // Prefer the call to our function; a model may also answer in content despite the tool
        // (or beside a call whose arguments are broken).
        let raw = reply
            .tool_calls
            .iter()
            .find(|c| c.name == name)
            .or_else(|| reply.tool_calls.first())
            .and_then(|c| parse_arguments(&c.arguments))
            .or_else(|| extract_json(&reply.content));
        let Some(raw) = raw else {
            self.fail(
                1,
                "the reply held neither a function call with a JSON object nor JSON",
            );
            return None;
        };
        self.accept(1, raw)
    }

    /// Levels 2 (JSON mode) and 3 (plain text): one attempt, then one re-format retry.
    async fn text_level(&mut self, level: u8) -> Option<Found<T>> {
        let schema = schema_text(&self.call.schema);
        let messages = with_system_note(
            &self.call.messages,
            &SCHEMA_INSTRUCTION.replace("{schema}", &schema),
        );
        let format = (level == 2).then_some(ResponseFormat::JsonObject);
        let request = |messages: Vec<Message>| ChatRequest {
            response_format: format.clone(),
            ..ChatRequest::new(messages)
        };
        let reply = self.ask(level, request(messages.clone())).await?;
        if let Some(found) = self.read_text(level, &reply.content) {
            return Some(found);
        }
        let retry_prompt = REFORMAT_PROMPT
            .replace("{reason}", &self.last_reason)
            .replace("{schema}", &schema);
        let mut retry = messages;
        // A reply too large to read is not sent back either; one sent back goes as the provider
        // sent it (a thinking model wants its reasoning with it).
        let (said, continuity) = if reply.content.len() > MAX_STRUCTURED_REPLY_BYTES {
            (format!("[a reply of {} bytes]", reply.content.len()), None)
        } else {
            (reply.content, reply.continuity)
        };
        retry.push(Message::assistant(said).with_continuity(continuity));
        retry.push(Message::user(retry_prompt));
        let reply = self.ask(level, request(retry)).await?;
        self.read_text(level, &reply.content)
    }

    /// Reads a text reply: [`extract_json`], then (level 3 only) the regex fallback, each
    /// candidate checked by `parse_fn`.
    fn read_text(&mut self, level: u8, content: &str) -> Option<Found<T>> {
        if content.len() > MAX_STRUCTURED_REPLY_BYTES {
            self.fail(level, &too_large(content.len()));
            return None;
        }
        if let Some(raw) = extract_json(content) {
            if let Some(found) = self.accept(level, raw) {
                return Some(found);
            }
        } else {
            self.fail(level, "the reply contains no JSON object");
        }
        if level == 3 {
            if let Some(raw) = self.call.regex_fallback.as_ref().and_then(|f| f(content)) {
                return self.accept(level, raw);
            }
        }
        None
    }

    /// Runs `parse_fn`; its error becomes the reason this attempt failed.
    fn accept(&mut self, level: u8, raw: Value) -> Option<Found<T>> {
        match (self.call.parse_fn)(&raw) {
            Ok(value) => Some((level, raw, value)),
            Err(e) => {
                self.fail(level, &format!("the JSON was rejected: {e}"));
                None
            }
        }
    }

    /// One LLM call. Every call counts once in `llm_calls` and in `usage.llm_calls` (even a
    /// failed one, whose tokens are unknown and count as 0), so the two always agree.
    async fn ask(&mut self, level: u8, request: ChatRequest) -> Option<ChatResponse> {
        self.llm_calls += 1;
        match self.llm.chat(request).await {
            Ok(reply) => {
                self.usage += Usage {
                    llm_calls: 1,
                    ..reply.usage
                };
                Some(reply)
            }
            Err(e) => {
                self.usage += Usage {
                    llm_calls: 1,
                    ..Usage::default()
                };
                self.fail(level, &format!("LLM error: {e}"));
                None
            }
        }
    }

    fn fail(&mut self, level: u8, reason: &str) {
        // The reason may quote the model's reply: it is logged and sent back, so it is cut.
        let reason = &*clip(reason, REASON_CHARS);
        tracing::debug!(level, reason, "structured output attempt failed");
        self.last_error = format!("level {level}: {reason}");
        self.last_reason = reason.to_string();
    }
}

/// Parses function-call arguments: strict JSON first, then the tolerant [`extract_json`]
/// (providers sometimes send fenced or slightly broken arguments).
fn parse_arguments(arguments: &str) -> Option<Value> {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => Some(v),
        _ => extract_json(arguments),
    }
}

/// Why a reply over [`MAX_STRUCTURED_REPLY_BYTES`] was not read.
fn too_large(bytes: usize) -> String {
    format!(
        "the reply is {bytes} bytes, more than the {MAX_STRUCTURED_REPLY_BYTES} a structured reply \
         may have"
    )
}

/// The schema as prompt text: compact JSON (`Display` of a `Value`), as it is repeated in
/// retries.
fn schema_text(schema: &Value) -> String {
    schema.to_string()
}

/// `messages` with `note` appended to the leading system message, or a new system message in
/// front when there is none. Merging keeps one system message: several providers reject a
/// system message anywhere but first.
fn with_system_note(messages: &[Message], note: &str) -> Vec<Message> {
    let mut out = messages.to_vec();
    match out.first_mut() {
        Some(first) if first.role == Role::System => {
            if !first.content.is_empty() {
                first.content.push_str("\n\n");
            }
            first.content.push_str(note);
        }
        _ => out.insert(0, Message::system(note)),
    }
    out
}

#[cfg(test)]
mod tests;
