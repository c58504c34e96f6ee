//! `TEST_LOG=1` shows the logs of the code under test: in-process apps and engines log through
//! a `tracing` subscriber writing to the test's output (libtest shows it for failing tests, or
//! always with `--nocapture`), and child processes' logs are echoed. `RUST_LOG` filters as
//! usual (default `info`). Without `TEST_LOG` the tests are quiet.

use std::io::IsTerminal;
use std::sync::Once;

/// Whether `TEST_LOG` asks for logs.
pub fn enabled() -> bool {
    std::env::var("TEST_LOG").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Installs the test subscriber once per process when `TEST_LOG` is set; cheap to call from
/// every helper that starts code under test.
pub fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        if !enabled() {
            return;
        }
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
        // Another subscriber may already be set (never by these tests): keep it.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(std::io::stderr().is_terminal())
            .with_test_writer()
            .try_init();
    });
}
