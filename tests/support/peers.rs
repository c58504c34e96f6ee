//! Where the real protocol peers installed by `scripts/peers.sh` are: the Python virtualenv
//! (`REAGENT_PEERS_DIR`, default `~/.cache/reagent-peers`) and `tests/peers/node_modules`. A
//! missing peer fails the test with the command that installs it; it is never skipped.

use std::path::PathBuf;

/// The folder of the checkout's `tests/peers/` (scripts and packages of the peers).
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers")
}

/// The virtualenv's Python, which has every package of `tests/peers/requirements.txt`.
pub fn python() -> PathBuf {
    let root = std::env::var_os("REAGENT_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
            PathBuf::from(home).join(".cache/reagent-peers")
        });
    let python = root.join("venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/peers.sh (installs the pinned test peers)",
        python.display()
    );
    python
}

/// A file of an installed npm package, e.g. `node_module("openai/package.json")`.
pub fn node_module(path: &str) -> PathBuf {
    let file = dir().join("node_modules").join(path);
    assert!(
        file.exists(),
        "{} is missing: run scripts/peers.sh (installs the pinned test peers)",
        file.display()
    );
    file
}
