//! The Messages request body, serialised in one pass from the [`ChatRequest`] (borrowed views,
//! no intermediate `serde_json::Value`), as `providers/openai/request.rs` does for Chat Completions.
//!
//! The mapping: leading system messages become the top-level `system`; user, tool and later
//! system messages make `user` turns (consecutive ones merged into one turn: the tool results
//! of one assistant turn first, in the order of its calls, then the texts); assistant messages
//! make `assistant` turns of `text` and `tool_use` blocks, with the model's own `thinking` and
//! `redacted_thinking` blocks put back where they were when the turn is replayed to the model
//! that wrote it. The messages come last in the body, so that a later call of the same run
//! shares every byte before them. With caching on, `cache_control` marks the end of the tools,
//! of the system prompt and of the last message (three breakpoints of Anthropic's four).
//!
//! Each kind of block is written by a function of its own (`blocks`), so a new kind of part
//! (an image) is one more variant.

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::Value;

mod blocks;

use self::blocks::{Block, Ephemeral, Marked};
use super::THINKING_KEY;
use crate::llm::{ChatRequest, Continuity, Message, Role, ToolCall, ToolChoice, ToolDefinition};

/// What the body needs besides the request: the model's settings.
#[derive(Clone, Copy, Debug)]
pub(in crate::llm) struct Settings<'a> {
    /// The provider's model name.
    pub model: &'a str,
    /// The registry name: only continuity stamped with it is replayed.
    pub name: &'a str,
    /// `max_tokens`, required by the API: the request's, else this.
    pub max_tokens: u32,
    /// `thinking = { budget_tokens }` of the model.
    pub thinking: Option<u32>,
    /// `cache = true`: the three breakpoints.
    pub cache: bool,
    pub stream: bool,
}

/// The body of one request: `RequestBody::encode(&request_body(..), ..)` writes it.
pub(in crate::llm) fn request_body<'a>(
    settings: Settings<'a>,
    request: &'a ChatRequest,
) -> RequestBody<'a> {
    RequestBody { settings, request }
}

pub(in crate::llm) struct RequestBody<'a> {
    settings: Settings<'a>,
    request: &'a ChatRequest,
}

impl Serialize for RequestBody<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (r, o) = (self.request, &self.settings);
        let system = r
            .messages
            .iter()
            .take_while(|m| m.role == Role::System)
            .count();
        // Forcing a tool and extended thinking exclude each other: a forced call (structured
        // output) goes without thinking.
        let forced = matches!(
            r.tool_choice,
            Some(ToolChoice::Required | ToolChoice::Function(_))
        );
        let thinking = o.thinking.filter(|_| !forced || r.tools.is_empty());
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("model", o.model)?;
        let max_tokens = r.max_tokens.unwrap_or(o.max_tokens);
        // The budget is part of max_tokens: leave the answer room beyond it.
        let max_tokens = thinking.map_or(max_tokens, |b| max_tokens.max(b.saturating_add(1024)));
        map.serialize_entry("max_tokens", &max_tokens)?;
        if system > 0 {
            map.serialize_entry("system", &System(&r.messages[..system], o.cache))?;
        }
        if !r.tools.is_empty() {
            map.serialize_entry("tools", &Tools(&r.tools, o.cache))?;
            if let Some(choice) = &r.tool_choice {
                map.serialize_entry("tool_choice", &Choice(choice))?;
            }
        }
        if let Some(budget) = thinking {
            map.serialize_entry("thinking", &Thinking(budget))?;
        } else {
            // Extended thinking accepts neither; without it each goes only when set.
            if let Some(t) = r.temperature {
                map.serialize_entry("temperature", &decimal(t))?;
            }
            if let Some(p) = r.top_p {
                map.serialize_entry("top_p", &decimal(p))?;
            }
        }
        if o.stream {
            map.serialize_entry("stream", &true)?;
        }
        let turns = Turns {
            messages: &r.messages[system..],
            name: o.name,
            cache: o.cache,
        };
        map.serialize_entry("messages", &turns)?;
        map.end()
    }
}

/// Via the decimal text, so that 0.7f32 goes out as 0.7, not 0.699999988079071.
fn decimal(v: f32) -> f64 {
    v.to_string().parse().unwrap_or(f64::from(v))
}

struct Thinking(u32);

impl Serialize for Thinking {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("type", "enabled")?;
        map.serialize_entry("budget_tokens", &self.0)?;
        map.end()
    }
}

/// The leading system messages as text blocks, the last one a breakpoint when caching.
struct System<'a>(&'a [Message], bool);

impl Serialize for System<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (n, m) in self.0.iter().enumerate() {
            let last = n + 1 == self.0.len();
            seq.serialize_element(&Marked(Block::Text(&m.content), self.1 && last))?;
        }
        seq.end()
    }
}

struct Tools<'a>(&'a [ToolDefinition], bool);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (n, t) in self.0.iter().enumerate() {
            let last = n + 1 == self.0.len();
            seq.serialize_element(&Tool(t, self.1 && last))?;
        }
        seq.end()
    }
}

struct Tool<'a>(&'a ToolDefinition, bool);

impl Serialize for Tool<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("name", &self.0.name)?;
        map.serialize_entry("description", &self.0.description)?;
        map.serialize_entry("input_schema", &self.0.parameters)?;
        if self.1 {
            map.serialize_entry("cache_control", &Ephemeral)?;
        }
        map.end()
    }
}

struct Choice<'a>(&'a ToolChoice);

impl Serialize for Choice<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        match self.0 {
            ToolChoice::Auto => map.serialize_entry("type", "auto")?,
            ToolChoice::None => map.serialize_entry("type", "none")?,
            ToolChoice::Required => map.serialize_entry("type", "any")?,
            ToolChoice::Function(name) => {
                map.serialize_entry("type", "tool")?;
                map.serialize_entry("name", name)?;
            }
        }
        map.end()
    }
}

/// The conversation after the system prompt, as alternating turns.
struct Turns<'a> {
    messages: &'a [Message],
    name: &'a str,
    cache: bool,
}

/// Whether a message goes into a `user` turn.
fn user_side(m: &Message) -> bool {
    m.role != Role::Assistant
}

impl Serialize for Turns<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        let mut rest = self.messages;
        let mut previous: Option<&[Message]> = None;
        while let Some(first) = rest.first() {
            let side = user_side(first);
            let len = rest.iter().take_while(|m| user_side(m) == side).count();
            let (turn, after) = rest.split_at(len);
            let mark = self.cache && after.is_empty();
            if side {
                let calls = previous.and_then(|p| p.last()).map(|m| &m.tool_calls[..]);
                seq.serialize_element(&UserTurn(turn, calls.unwrap_or_default(), mark))?;
            } else {
                seq.serialize_element(&AssistantTurn(turn, self.name, mark))?;
            }
            previous = Some(turn);
            rest = after;
        }
        seq.end()
    }
}

/// Writes `{"role": role, "content": [blocks]}`, the last block marked when `mark`.
fn turn<S: Serializer>(
    s: S,
    role: &str,
    blocks: &[Block<'_>],
    mark: bool,
) -> Result<S::Ok, S::Error> {
    struct Content<'b>(&'b [Block<'b>], bool);
    impl Serialize for Content<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut seq = s.serialize_seq(Some(self.0.len()))?;
            for (n, b) in self.0.iter().enumerate() {
                let last = n + 1 == self.0.len();
                seq.serialize_element(&Marked(*b, self.1 && last))?;
            }
            seq.end()
        }
    }
    let mut map = s.serialize_map(Some(2))?;
    map.serialize_entry("role", role)?;
    map.serialize_entry("content", &Content(blocks, mark))?;
    map.end()
}

/// User, tool and later system messages: the tool results first, in the order of `calls`
/// (those answering no call after them), then the texts in their order.
struct UserTurn<'a>(&'a [Message], &'a [ToolCall], bool);

impl Serialize for UserTurn<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (messages, calls) = (self.0, self.1);
        let mut results: Vec<&Message> = messages.iter().filter(|m| m.role == Role::Tool).collect();
        let order = |m: &&Message| {
            let id = m.tool_call_id.as_deref();
            calls
                .iter()
                .position(|c| Some(c.id.as_str()) == id)
                .unwrap_or(usize::MAX)
        };
        results.sort_by_key(order);
        let mut blocks: Vec<Block<'_>> = results.into_iter().map(Block::ToolResult).collect();
        for m in messages.iter().filter(|m| m.role != Role::Tool) {
            blocks.push(Block::Text(&m.content));
            blocks.extend(m.images.iter().map(Block::Image));
        }
        turn(s, "user", &blocks, self.2)
    }
}

/// Assistant messages: their kept blocks (for this model only) where they were, then text and
/// `tool_use` blocks.
struct AssistantTurn<'a>(&'a [Message], &'a str, bool);

impl Serialize for AssistantTurn<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut blocks = Vec::new();
        for m in self.0 {
            let kept = match &m.continuity {
                Some(c) if c.model == self.1 => kept_blocks(c),
                _ => &[],
            };
            let start = blocks.len();
            if !m.content.is_empty() || m.tool_calls.is_empty() {
                blocks.push(Block::Text(&m.content));
            }
            blocks.extend(m.tool_calls.iter().map(Block::ToolUse));
            for k in kept {
                let at = k.get("at").and_then(Value::as_u64).unwrap_or(0);
                let at = usize::try_from(at).unwrap_or(usize::MAX);
                let Some(block) = k.get("block") else {
                    continue;
                };
                blocks.insert((start + at).min(blocks.len()), Block::Kept(block));
            }
        }
        turn(s, "assistant", &blocks, self.2)
    }
}

/// The `thinking` / `redacted_thinking` blocks kept with a turn: `[{at, block}]`, `at` being the
/// block's position in the content the model sent.
fn kept_blocks(c: &Continuity) -> &[Value] {
    match c.message.get(THINKING_KEY) {
        Some(Value::Array(items)) => items,
        _ => &[],
    }
}
