//! `[dag]`: the engine choice and the DAG planner's knobs (docs/configuration.md), with their defaults,
//! their environment variables and their checks in one place.

use std::collections::HashMap;

use serde::Deserialize;

use super::env::{get, int};
use super::validate::at_least;
use super::ConfigError;
use crate::domain::Engine;

/// `[dag]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DagConfig {
    /// `REAGENT_DEFAULT_ENGINE`: the engine of a run that names none (nor its conversation).
    pub default_engine: Engine,
    /// `DAG_MAX_STEPS`: the most steps one plan may have.
    pub max_steps: usize,
    /// `DAG_MAX_CONCURRENCY`: steps running at once.
    pub max_concurrency: usize,
    /// `DAG_STEP_MAX_ITERATIONS`: each step's ReAct iteration cap.
    pub step_max_iterations: u32,
    /// `DAG_STEP_TIMEOUT_S`: each step's time, counted from when it starts running.
    pub step_timeout_s: u64,
    /// `DAG_MAX_REPLANS`: re-plans the analyser may ask for.
    pub max_replans: u32,
    /// `DAG_MAX_ROUNDS`: all rounds together, re-plans after interrupts included.
    pub max_rounds: u32,
    /// `DAG_REPLAN_STOP_CONFIDENCE`: no re-plan at or above this confidence.
    pub replan_stop_confidence: f64,
}

impl Default for DagConfig {
    fn default() -> Self {
        Self {
            default_engine: Engine::React,
            max_steps: 10,
            max_concurrency: 4,
            step_max_iterations: 15,
            step_timeout_s: 600,
            max_replans: 2,
            max_rounds: 5,
            replan_stop_confidence: 0.8,
        }
    }
}

/// The file's values, checked under their file names.
pub(super) fn check(d: &DagConfig, prefix: &str) -> Result<(), ConfigError> {
    let key = |k: &str| format!("{prefix}{k}");
    at_least(&key("max_steps"), d.max_steps, 1)?;
    at_least(&key("max_concurrency"), d.max_concurrency, 1)?;
    at_least(&key("step_max_iterations"), d.step_max_iterations, 1)?;
    at_least(&key("step_timeout_s"), d.step_timeout_s, 1)?;
    at_least(&key("max_rounds"), d.max_rounds, 1)?;
    confidence(&key("replan_stop_confidence"), d.replan_stop_confidence)
}

fn confidence(key: &str, v: f64) -> Result<(), ConfigError> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(ConfigError::value(key, v, "expected a number from 0 to 1"))
    }
}

/// Applies `REAGENT_DEFAULT_ENGINE` and the `DAG_*` variables.
pub(super) fn apply(d: &mut DagConfig, env: &HashMap<String, String>) -> Result<(), ConfigError> {
    if let Some(raw) = get(env, "REAGENT_DEFAULT_ENGINE") {
        d.default_engine = raw.parse().map_err(|_| {
            ConfigError::value("REAGENT_DEFAULT_ENGINE", raw, "expected react, dag or auto")
        })?;
    }
    let set = |slot: &mut usize, v: Option<usize>| {
        if let Some(v) = v {
            *slot = v;
        }
    };
    set(&mut d.max_steps, int(env, "DAG_MAX_STEPS", 1)?);
    set(&mut d.max_concurrency, int(env, "DAG_MAX_CONCURRENCY", 1)?);
    if let Some(v) = int(env, "DAG_STEP_MAX_ITERATIONS", 1)? {
        d.step_max_iterations = v;
    }
    if let Some(v) = int(env, "DAG_STEP_TIMEOUT_S", 1)? {
        d.step_timeout_s = v;
    }
    if let Some(v) = int(env, "DAG_MAX_REPLANS", 0)? {
        d.max_replans = v;
    }
    if let Some(v) = int(env, "DAG_MAX_ROUNDS", 1)? {
        d.max_rounds = v;
    }
    if let Some(raw) = get(env, "DAG_REPLAN_STOP_CONFIDENCE") {
        let v: f64 = raw.parse().map_err(|_| {
            ConfigError::value(
                "DAG_REPLAN_STOP_CONFIDENCE",
                raw,
                "expected a number from 0 to 1",
            )
        })?;
        confidence("DAG_REPLAN_STOP_CONFIDENCE", v)?;
        d.replan_stop_confidence = v;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_are_the_spec_ones_and_the_environment_overrides_them() {
        let mut d = DagConfig::default();
        assert_eq!((d.max_steps, d.max_concurrency, d.max_rounds), (10, 4, 5));
        apply(
            &mut d,
            &env(&[
                ("REAGENT_DEFAULT_ENGINE", "auto"),
                ("DAG_MAX_CONCURRENCY", "2"),
                ("DAG_MAX_REPLANS", "0"),
                ("DAG_REPLAN_STOP_CONFIDENCE", "0.5"),
            ]),
        )
        .unwrap();
        assert_eq!(d.default_engine, Engine::Auto);
        assert_eq!((d.max_concurrency, d.max_replans), (2, 0));
        assert_eq!(d.replan_stop_confidence, 0.5);
    }

    #[test]
    fn bad_values_name_their_key() {
        for (k, v) in [
            ("REAGENT_DEFAULT_ENGINE", "turbo"),
            ("DAG_MAX_STEPS", "0"),
            ("DAG_REPLAN_STOP_CONFIDENCE", "1.5"),
        ] {
            let e = apply(&mut DagConfig::default(), &env(&[(k, v)])).unwrap_err();
            assert_eq!(e.key(), Some(k), "{e}");
        }
        let bad = DagConfig {
            max_concurrency: 0,
            ..DagConfig::default()
        };
        let e = check(&bad, "dag.").unwrap_err();
        assert_eq!(e.key(), Some("dag.max_concurrency"));
    }
}
