//! The tool-call limits (`[react]` and `[tools]`): defaults, file and environment, and the
//! errors that name the key.

use super::*;

#[test]
fn the_limits_default_to_32_200_1m_256k_64_and_8() {
    let c = load(None, &[]).unwrap();
    let r = &c.react;
    assert_eq!(
        (r.max_tool_calls_per_reply, r.max_tool_calls_per_run),
        (32, 200)
    );
    assert_eq!(r.synthesis_max_bytes, 256 * 1024);
    assert_eq!(r.max_tool_arguments_bytes, 1024 * 1024);
    assert_eq!(
        (c.tools.max_concurrent, c.tools.max_concurrent_per_run),
        (64, 8)
    );
    assert!(c
        .summary()
        .contains("tool calls: 32 per reply, 200 per run"));
}

#[test]
fn the_limits_are_read_from_the_file_and_the_environment() {
    let file = "[react]\nmax_tool_calls_per_reply = 4\nmax_tool_calls_per_run = 40\n\
                synthesis_max_bytes = 4096\n[tools]\nmax_concurrent = 16\nmax_concurrent_per_run = 2\n";
    let c = load(Some(file), &[]).unwrap();
    assert_eq!(
        (
            c.react.max_tool_calls_per_reply,
            c.react.max_tool_calls_per_run
        ),
        (4, 40)
    );
    assert_eq!(c.react.synthesis_max_bytes, 4096);
    assert_eq!(
        (c.tools.max_concurrent, c.tools.max_concurrent_per_run),
        (16, 2)
    );
    let c = load(
        Some(file),
        &[
            ("REACT_MAX_TOOL_CALLS_PER_REPLY", "5"),
            ("REACT_MAX_TOOL_CALLS_PER_RUN", "50"),
            ("REACT_SYNTHESIS_MAX_BYTES", "8192"),
            ("REACT_MAX_TOOL_ARGUMENTS_BYTES", "2048"),
            ("REAGENT_MAX_CONCURRENT_TOOLS", "32"),
            ("REAGENT_MAX_CONCURRENT_TOOLS_PER_RUN", "3"),
        ],
    )
    .unwrap();
    assert_eq!(
        (
            c.react.max_tool_calls_per_reply,
            c.react.max_tool_calls_per_run
        ),
        (5, 50)
    );
    assert_eq!(c.react.synthesis_max_bytes, 8192);
    assert_eq!(c.react.max_tool_arguments_bytes, 2048);
    assert_eq!(
        (c.tools.max_concurrent, c.tools.max_concurrent_per_run),
        (32, 3)
    );
}

#[test]
fn bad_limits_name_their_key() {
    let files = [
        (
            "[react]\nmax_tool_calls_per_reply = 0\n",
            "invalid value 0 for react.max_tool_calls_per_reply: expected a positive integer",
        ),
        (
            "[react]\nmax_tool_calls_per_run = 0\n",
            "invalid value 0 for react.max_tool_calls_per_run",
        ),
        (
            "[react]\nsynthesis_max_bytes = 100\n",
            "invalid value 100 for react.synthesis_max_bytes: expected at least 1024",
        ),
        (
            "[react]\nmax_tool_arguments_bytes = 0\n",
            "invalid value 0 for react.max_tool_arguments_bytes",
        ),
        (
            "[tools]\nmax_concurrent = 0\n",
            "invalid value 0 for tools.max_concurrent",
        ),
        (
            "[tools]\nmax_concurrent_per_run = 0\n",
            "invalid value 0 for tools.max_concurrent_per_run",
        ),
    ];
    for (file, expected) in files {
        let message = err(Some(file), &[]);
        assert!(message.contains(expected), "{file}: got {message:?}");
    }
    let vars = [
        ("REACT_MAX_TOOL_CALLS_PER_REPLY", "0"),
        ("REACT_MAX_TOOL_CALLS_PER_RUN", "many"),
        ("REACT_SYNTHESIS_MAX_BYTES", "1000"),
        ("REACT_MAX_TOOL_ARGUMENTS_BYTES", "0"),
        ("REAGENT_MAX_CONCURRENT_TOOLS", "-1"),
        ("REAGENT_MAX_CONCURRENT_TOOLS_PER_RUN", "0"),
    ];
    for (var, value) in vars {
        let message = err(None, &[(var, value)]);
        assert!(
            message.contains(&format!("invalid value \"{value}\" for {var}"))
                || message.contains(&format!("invalid value {value} for {var}")),
            "{var}={value}: got {message:?}"
        );
    }
}
