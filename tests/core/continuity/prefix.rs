//! Prefix stability on both protocols: every loop call of a run sends exactly what the one
//! before it sent and only appends messages, so a provider's prompt cache keeps hitting. On the
//! Anthropic path the one difference allowed is the moving `cache_control` breakpoint of the
//! last message, which is taken out before comparing.
//!
//! How it is checked, on the bytes the provider received: a body is
//! `{"model":…,"messages":[<elements>]<tail>}`; the messages array is found by scanning the JSON
//! text (strings and escapes respected) from `"messages":[` to its closing bracket. Then the part
//! before the array (the model) and the tail after it (tools, tool choice) must be byte-identical
//! in every call, and each call's elements (the system prompt is the first) must be a byte
//! prefix of the next call's, continued by a comma: only new elements were appended.

use reagent::agent::RunStatus;

use super::*;

/// The byte span of the elements of the top-level `"messages"` array of `body`.
fn messages_span(body: &[u8]) -> (usize, usize) {
    const KEY: &[u8] = b"\"messages\":[";
    let start = body
        .windows(KEY.len())
        .position(|w| w == KEY)
        .expect("a messages array")
        + KEY.len();
    let (mut depth, mut in_string, mut escaped) = (0i32, false, false);
    for (i, &b) in body.iter().enumerate().skip(start) {
        match (in_string, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'[' | b'{') => depth += 1,
            (false, _, b']' | b'}') if depth == 0 => return (start, i),
            (false, _, b']' | b'}') => depth -= 1,
            _ => {}
        }
    }
    panic!("the messages array never closes");
}

#[tokio::test]
async fn five_loop_calls_with_a_reflection_and_a_cycle_warning_only_append() {
    let fake = thinking().await;
    // The same call twice with another between them (a cycle warning at the second; right
    // after it, the repeat would end the loop), reflection after the second distinct call.
    for n in 1..=4 {
        let args = [
            r#"{"x":"same"}"#,
            r#"{"x":"3"}"#,
            r#"{"x":"same"}"#,
            r#"{"x":"4"}"#,
        ];
        let call = (format!("c{n}"), "lookup", args[n - 1]);
        fake.push(FakeReply::tool_calls(vec![call]).reasoning(format!("thought {n}")));
    }
    fake.push(FakeReply::text("done"));
    let config = AgentConfig {
        completion_check: false,
        self_reflection_interval: 2,
        cycle_detection_threshold: 2,
        ..AgentConfig::default()
    };
    let result = agent(client(&fake, "thinker", "deepseek-reasoner"), config)
        .run(input(vec![]), handles(Arc::default()))
        .await;
    assert_eq!(result.outcome.status, RunStatus::Completed);
    assert_eq!(result.outcome.iterations, 5);
    // The loop's five calls (the sixth is the answer's synthesis, a request of its own).
    let bodies: Vec<_> = fake.raw_requests().into_iter().take(5).collect();
    let last = String::from_utf8_lossy(&bodies[4]);
    assert!(last.contains("Pause and reflect"), "a reflection was sent");
    assert!(
        last.contains("identical arguments"),
        "a cycle warning was sent"
    );
    assert!(last.contains("reasoning_content"), "continuity was sent");
    only_appends(&bodies, "");
}

/// A breakpoint as the Anthropic encoder writes it after a block's fields.
const BREAKPOINT: &str = r#","cache_control":{"type":"ephemeral"}"#;

/// Checks that each body of `bodies` only appends to the one before, `strip` taken out of the
/// messages first (nothing when empty).
fn only_appends(bodies: &[axum::body::Bytes], strip: &str) {
    let cleaned = |m: &[u8]| -> Vec<u8> {
        let text = String::from_utf8_lossy(m);
        if strip.is_empty() {
            text.into_owned().into_bytes()
        } else {
            text.replace(strip, "").into_bytes()
        }
    };
    for pair in bodies.windows(2) {
        let (a, b) = (&pair[0][..], &pair[1][..]);
        let ((a_start, a_end), (b_start, b_end)) = (messages_span(a), messages_span(b));
        assert_eq!(a[..a_start], b[..b_start], "the part before the messages");
        assert_eq!(
            a[a_end..],
            b[b_end..],
            "the tools and everything after the messages"
        );
        let (old, new) = (cleaned(&a[a_start..a_end]), cleaned(&b[b_start..b_end]));
        assert!(
            new.starts_with(&old) && new[old.len()..].starts_with(b","),
            "not an append:\n{}\n---\n{}",
            String::from_utf8_lossy(&old),
            String::from_utf8_lossy(&new)
        );
    }
}

#[tokio::test]
async fn five_anthropic_loop_calls_with_a_reflection_and_a_cycle_warning_only_append() {
    use reagent::llm::client::{ClientConfig, ModelClient};
    use reagent::llm::providers::{AnthropicOptions, Protocol};
    use reagent::testing::fake_anthropic::{AnthropicReply, FakeAnthropic};
    let fake = FakeAnthropic::start().await.expect("fake server starts");
    // As above: a cycle warning at the second call, the next two other calls.
    for n in 1..=4 {
        let id = format!("toolu_{n}");
        let args = [
            r#"{"x":"same"}"#,
            r#"{"x":"3"}"#,
            r#"{"x":"same"}"#,
            r#"{"x":"4"}"#,
        ];
        let reply = AnthropicReply::tool_calls(&[(&id, "lookup", args[n - 1])]);
        fake.push(reply.thinking(&format!("thought {n}"), &format!("sig{n}")));
    }
    fake.push(AnthropicReply::text("done"));
    let llm = ModelClient::new(ClientConfig {
        protocol: Protocol::Anthropic(AnthropicOptions {
            thinking_budget: Some(1024),
            cache: true,
        }),
        base_url: fake.base_url(),
        api_key: None,
        model: "claude-x".into(),
        abilities: Abilities::default(),
        context_window: 200_000,
        max_output_tokens: 4_096,
        timeout: Duration::from_secs(10),
        max_retries: 0,
    })
    .expect("client builds");
    let config = AgentConfig {
        completion_check: false,
        self_reflection_interval: 2,
        cycle_detection_threshold: 2,
        ..AgentConfig::default()
    };
    let result = agent(Arc::new(llm), config)
        .run(input(vec![]), handles(Arc::default()))
        .await;
    assert_eq!(result.outcome.status, RunStatus::Completed);
    assert_eq!(result.outcome.iterations, 5);
    let bodies: Vec<_> = fake.raw_requests().into_iter().take(5).collect();
    let last = String::from_utf8_lossy(&bodies[4]);
    assert!(last.contains("Pause and reflect"), "a reflection was sent");
    assert!(
        last.contains("identical arguments"),
        "a cycle warning was sent"
    );
    assert!(
        last.contains("\"signature\":\"sig1\""),
        "thinking was sent back"
    );
    // Tools, system prompt and last message: three breakpoints, never more.
    assert!(bodies
        .iter()
        .all(|b| String::from_utf8_lossy(b).matches("cache_control").count() == 3));
    only_appends(&bodies, BREAKPOINT);
}
