//! Black-box tests of the HTTP API (docs/api.md) through the real router on 127.0.0.1:0, a
//! scripted model. See `tests/support/app.rs` for the `TestApp` helper.
//!
//! The scenarios that touch storage are plain `async fn(db_url)`s, run once per backend by
//! [`on_both_backends!`]: `<topic>::sqlite::<name>` on a temp file and
//! `<topic>::postgres::<name>` on a fresh PostgreSQL database (CI's 127.0.0.1:5432;
//! `REAGENT_SKIP_PG=1` skips them). The other tests check storage-independent behaviour and run
//! on SQLite only.
//!
//! By topic: [`agents`], [`approvals`], [`budgets`], [`conversations`], [`forks`], [`ops`], [`runs`], [`turns`].

mod agents;
mod approvals;
mod budgets;
mod caller_tools;
mod conversations;
mod forks;
mod image_history;
mod images;
mod ops;
mod runs;
mod turns;

use std::time::Duration;

use std::sync::Arc;

use futures::StreamExt;
use reagent::agent::RunStatus;
use reagent::domain::Mode;
use reagent::llm::Role;
use reagent::store::{NewConversation, NewRun, StoredEvent, EVENT_ID_BLOCK};
use reagent::testing::scripted::ScriptedLlm;
use serde_json::{json, Value};

use crate::support::app::{error_code, Options, TestApp};
use crate::support::eventually;
use crate::support::sse::{
    assert_ids_rise_with_one_crash_gap, assert_sequential, labels, read_all, Sse,
};
use crate::support::tools::{deploy, FakeTool};
