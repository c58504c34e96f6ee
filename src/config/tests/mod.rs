//! Configuration tests. They build configurations from strings and maps: no test reads or
//! changes the process environment.

use std::collections::HashMap;
use std::net::SocketAddr;

use super::*;
use crate::domain::{Abilities, SynthesisPolicy};

mod budgets;
mod docs;
mod env;
mod file;
mod limits;
mod models;

fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn load(file: Option<&str>, pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
    Config::load_from(file, &env(pairs))
}

fn err(file: Option<&str>, pairs: &[(&str, &str)]) -> String {
    match load(file, pairs) {
        Ok(c) => panic!("expected an error, got {c:?}"),
        Err(e) => e.to_string(),
    }
}

fn default_model(c: &Config) -> &ModelConfig {
    c.default_model_config().expect("default model exists")
}
