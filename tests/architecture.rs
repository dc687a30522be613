//! The layering of ARCHITECTURE.md, enforced: every `crate::` import of every module (tests
//! aside) must be an edge allowed here, and the allowed edges form no cycle. A new back-arrow
//! fails this test instead of slipping in. The rules inside the protocols' crate are its own
//! (`crates/protocols/tests/rooms.rs`); those between crates are Cargo's (`tests/workspace.rs`).

#[path = "support/layering.rs"]
mod layering;

use std::path::{Path, PathBuf};

/// The root package's sources.
fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Each top-level module of `src/` and the modules it may import. Read downwards: faces at
/// the top, the domain at the bottom. The domain (`debate`, `argue`, `vote`, `sanitize`,
/// `catalog`, `spelling`) is its own crate (`crates/domain`), which depends on no other part
/// of moot, and what moot asks of the operating system (`beneath`, `paths`, `signals`,
/// `fatal`, `place`) is `crates/os`, which depends only on the domain, and the journal
/// (`store`) is `crates/journal`, over those two: Cargo holds them, so they have no rows here.
const ALLOWED: &[(&str, &[&str])] = &[
    // What `moot` does with its parsed arguments: the dispatch to faces and commands.
    (
        "launch",
        &[
            "audit",
            "bench",
            "catalog",
            "cli",
            "commands",
            "config",
            "debate",
            "headless",
            "llm",
            "protocol",
            "providers",
            "session",
            "signals",
            "spelling",
            "store",
            "tui",
            "paths",
            "sanitize",
            "serve",
            "remote",
        ],
    ),
    (
        "commands",
        &[
            "debate", "store", "report", "catalog", "config", "sanitize", "cli", "llm", "protocol",
            "session", "arena", "audit", "lessons", "code", "diagram",
        ],
    ),
    ("cli", &["engine", "llm"]),
    // `moot bench`: a single model against a debate, on a provider it is handed.
    (
        "bench",
        &["debate", "llm", "store", "sanitize", "session", "code"],
    ),
];

/// Every import an allowed edge, every allowed edge used, no cycle.
#[test]
fn the_layering_holds() {
    layering::holds(&src(), ALLOWED);
}

/// The "never" rules of ARCHITECTURE.md's target layout that a module edge cannot say: a name
/// that may appear (outside comments and unit tests) only in the places listed, by path prefix
/// under `src/`. Until Cargo holds them as crate edges, this does.
const NEVER: &[(&str, &[&str], &[&str])] = &[
    (
        "only the binary names the protocols moot ships; the session, the faces and the server \
         are handed a Registry",
        &["builtin()", "protocol::builtin", "REGISTRY"],
        &["launch/", "commands/", "main.rs", "protocol/builtin.rs"],
    ),
    (
        "only the binary names the embedded engine; the session is handed its opener \
         (providers::OpenEmbedded)",
        &["llm::local", "local::"],
        &["launch/", "commands/", "main.rs", "lib.rs"],
    ),
    (
        "only the binary reads the command line; the session takes a DebateRequest and the \
         server its ServeOptions, and neither builds an argv",
        &["crate::cli", "RunArgs", "ProviderArgs", "ServeArgs", "clap"],
        &["launch/", "commands/", "main.rs", "cli.rs"],
    ),
];

/// Every non-test, non-comment line of every file under `src/`, with its path there.
fn code_lines() -> Vec<(String, String)> {
    layering::source_files(&src())
        .into_iter()
        .flat_map(|(relative, code)| {
            let file = relative.display().to_string();
            code.lines()
                .filter(|line| !line.trim_start().starts_with("//"))
                .map(|line| (file.clone(), line.to_string()))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn the_never_rules_hold() {
    let lines = code_lines();
    let mut wrong = Vec::new();
    for (rule, names, places) in NEVER {
        for (file, line) in &lines {
            let allowed = places.iter().any(|place| file.starts_with(place));
            if let Some(name) = names.iter().find(|name| line.contains(*name))
                && !allowed
            {
                wrong.push(format!(
                    "src/{file} names {name}: {rule}\n    {}",
                    line.trim()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// One build runs on every x86-64-v2 CPU: nothing in the build's settings names a target CPU
/// (a native one made llama.cpp build ggml's AMX path, which dies on some AMX hosts).
#[test]
fn the_build_names_no_target_cpu() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in [".cargo/config.toml", "Cargo.toml"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        assert!(
            !text.contains("target-cpu"),
            "{file} names a target CPU: moot builds for x86-64-v2 and picks kernels at run time"
        );
    }
}
