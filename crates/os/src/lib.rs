//! What moot asks of the operating system, in one place where `unsafe` is allowed and audited:
//! paths opened beneath a directory with no symlink on the way (`beneath`: openat2), where moot
//! keeps its files (`paths`), the signals that end a run politely (`signals`), the terminal
//! given back on a fatal signal (`fatal`), advisory locks on files (`lock`), where a key stands in a config file (`place`), and the box
//! model-written code runs in (`sandbox`: namespaces, seccomp, Landlock, cgroups).

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(unsafe_code)]

// The sanitizer, under the name the sandbox uses (a hook's environment keeps no key).
use moot_domain::sanitize;

#[allow(unsafe_code)]
pub mod beneath;
#[allow(unsafe_code)]
pub mod fatal;
#[allow(unsafe_code)]
pub mod lock;
pub mod paths;
pub mod place;
// Namespaces, seccomp, Landlock and cgroups, between fork and exec.
#[allow(unsafe_code)]
pub mod sandbox;
pub mod signals;
