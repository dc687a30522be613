//! End-to-end tests of the real `moot` binary against the stand-in server, one module a topic
//! (ripgrep's `tests/tests.rs`): one binary, so it links once.

#[path = "../support/postgres.rs"]
mod postgres_server;
#[path = "../support/mod.rs"]
mod support;

mod arena;
mod audit;
mod bench;
mod boxed;
mod code;
mod dialogue;
mod docs;
#[cfg(feature = "local")]
mod grammar;
mod home;
mod journal;
mod lessons;
mod live;
mod mcp;
mod moderated;
mod outcome;
mod panel;
mod readonly;
mod serve;
mod shell;
mod topology;
mod trust;
mod upgrade;
mod voting;

#[allow(unused_imports)]
pub(crate) use arena::*;
#[allow(unused_imports)]
pub(crate) use audit::*;
#[allow(unused_imports)]
pub(crate) use bench::*;
#[allow(unused_imports)]
pub(crate) use code::*;
#[allow(unused_imports)]
pub(crate) use dialogue::*;
pub(crate) use home::*;
#[allow(unused_imports)]
pub(crate) use lessons::*;
#[allow(unused_imports)]
pub(crate) use moderated::*;
#[allow(unused_imports)]
pub(crate) use panel::*;
pub(crate) use serde_json::Value;
pub(crate) use std::io::{BufRead, BufReader, Write};
pub(crate) use std::path::{Path, PathBuf};
pub(crate) use std::process::{Command, Output, Stdio};
pub(crate) use std::time::{Duration, Instant};
pub(crate) use support::{Behaviour, Fault, FaultRule, ORACLE_MODEL, SchemaSupport, StandIn};
#[allow(unused_imports)]
pub(crate) use topology::*;
#[allow(unused_imports)]
pub(crate) use trust::*;
#[allow(unused_imports)]
pub(crate) use voting::*;
