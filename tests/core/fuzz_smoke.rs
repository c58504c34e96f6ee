//! The fuzz targets of `fuzz/` (cargo-fuzz) as a quick CI test: the same bodies (shared through
//! `include!`, see `fuzz/bodies.rs`) run over the committed corpus (`fuzz/corpus/<target>/`,
//! seeds plus what the long fuzzing runs kept) and then over a few thousand inputs derived
//! from it — byte flips, insertions of tokens the parsers care about, splices, truncations —
//! plus random text. A panic or a failed invariant fails the test and prints the input.
//!
//! Deterministic by default; `FUZZ_SMOKE_SEED=<n>` picks another seed and
//! `FUZZ_SMOKE_ROUNDS=<n>` more rounds. The long run is documented in `fuzz/README.md`.

#[allow(dead_code)]
mod bodies {
    include!("../../fuzz/bodies.rs");
}

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

/// Mutated inputs per target.
const DEFAULT_ROUNDS: usize = 5000;

/// Tokens worth inserting: structure of JSON, TOML, SSE and the stream's chunk fields.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    "\\",
    ",",
    ":",
    "\n",
    "```",
    "```json\n",
    "null",
    "true",
    "1e999",
    "-0",
    "\"\\u0000\"",
    "\u{1F600}",
    "é",
    "[DONE]",
    "\n---\n",
    "=",
    "[[models]]\n",
    "[[hooks]]\n",
    "kind = \"webhook\"\n",
    "{\"choices\":[{\"delta\":",
    "\"tool_calls\":[{\"index\":",
    "\"id\":\"x\"",
    "\"arguments\":\"",
    "\"finish_reason\":\"stop\"",
    "\"type\":\"tool_call\"",
    "\"tool_name\":",
    "\"tool_args\":",
    "4294967296",
    "99999999999999999999",
];

/// xorshift64*: tiny and reproducible; quality is irrelevant here.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn env_number(key: &str, default: u64) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut data = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(data.len() + 1);
        match rng.below(6) {
            0 if !data.is_empty() => {
                let i = rng.below(data.len());
                data[i] ^= 1 << rng.below(8);
            }
            1 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                data.splice(at..at, t.iter().copied());
            }
            2 if !data.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(data.len());
                data.drain(at.min(end)..end);
            }
            3 => data.truncate(at),
            4 => {
                let other = &seeds[rng.below(seeds.len())];
                let from = rng.below(other.len() + 1);
                data.splice(at..at, other[from..].iter().copied());
            }
            _ => {
                let n = rng.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                data.splice(at..at, bytes);
            }
        }
    }
    data
}

fn run(target: &str, body: fn(&[u8]), salt: u64) {
    let seeds = corpus(target);
    assert!(!seeds.is_empty(), "empty corpus for {target}");
    let check = |data: &[u8], what: &str| {
        if catch_unwind(AssertUnwindSafe(|| body(data))).is_err() {
            panic!(
                "{target}: {what} failed on input {:?}",
                String::from_utf8_lossy(data)
            );
        }
    };
    for (i, seed) in seeds.iter().enumerate() {
        check(seed, &format!("corpus entry {i}"));
    }
    let seed = env_number("FUZZ_SMOKE_SEED", 0x5EED) ^ salt;
    let mut rng = Rng(seed | 1);
    let rounds = env_number("FUZZ_SMOKE_ROUNDS", DEFAULT_ROUNDS as u64) as usize;
    for round in 0..rounds {
        let data = if round % 10 == 9 {
            (0..rng.below(64)).map(|_| rng.next() as u8).collect()
        } else {
            mutate(&mut rng, &seeds)
        };
        check(&data, &format!("round {round} (seed {seed:#x})"));
    }
}

#[test]
fn extract_json_target() {
    run("extract_json", bodies::extract_json_body, 1);
}

#[test]
fn action_target() {
    run("action", bodies::action_body, 2);
}

#[test]
fn stream_decoder_target() {
    run("stream_decoder", bodies::stream_body, 3);
}

#[test]
fn config_target() {
    run("config", bodies::config_body, 4);
}

/// The bodies must be able to fail: a broken invariant is reported, not swallowed.
#[test]
fn a_failing_body_fails_the_run() {
    let outcome = catch_unwind(|| run("action", |_| panic!("planted"), 5));
    assert!(outcome.is_err());
}
