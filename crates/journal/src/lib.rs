//! The journal: every debate moot runs, kept in SQLite (WAL, numbered migrations, full-text
//! search, the hash chain and its receipts, the audit trail, leases, bench runs and lessons),
//! so a debate can be listed, searched, replayed, verified and resumed.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

// The domain under the names the journal's modules use.
use moot_domain::{debate, sanitize};

pub mod store;
