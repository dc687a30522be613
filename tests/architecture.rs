//! The layering of ARCHITECTURE.md, enforced: every `crate::` import of every module (tests
//! aside) must be an edge allowed here, and the allowed edges form no cycle. A new back-arrow
//! fails this test instead of slipping in. One level into `protocol/`, every protocol is a
//! folder that imports the shared rooms and the seam (`moot-engine`'s), never another protocol.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

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
    // The faces and the command line.
    (
        "tui",
        &[
            "debate",
            "argue",
            "store",
            "session",
            "replay",
            "sanitize",
            "signals",
            "config",
            "remote",
            "fatal",
            "beneath",
            "providers",
        ],
    ),
    // A server's debates listed and followed over its API (`moot attach`, the history); a
    // listed debate reads as the journal's own summary.
    ("remote", &["debate", "llm", "sanitize", "signals", "store"]),
    ("headless", &["debate", "session", "signals", "live"]),
    // The HTTP API: a face over the same sessions, read back as the commands read them.
    (
        "serve",
        &[
            "debate",
            "session",
            "store",
            "report",
            "providers",
            "config",
            "sanitize",
            "signals",
            "live",
            "paths",
        ],
    ),
    (
        "commands",
        &[
            "debate", "store", "report", "catalog", "config", "sanitize", "cli", "llm", "protocol",
            "session", "arena", "audit", "lessons", "code", "diagram",
        ],
    ),
    // The audit trail read back and verified by a re-run.
    (
        "audit",
        &[
            "debate", "session", "store", "sanitize", "protocol", "decision",
        ],
    ),
    ("cli", &["engine", "llm"]),
    // Reading stored debates back.
    ("replay", &["debate", "store", "session", "llm", "live"]),
    // A running debate's events on a socket, and a viewer's end of it.
    ("live", &["debate", "sanitize"]),
    ("report", &["debate", "argue", "store", "sanitize"]),
    // Running one debate.
    (
        "session",
        &[
            "debate",
            "engine",
            "protocol",
            "store",
            "llm",
            "providers",
            "config",
            "decision",
            "catalog",
            "vote",
            "lessons",
            "sanitize",
            "report",
            "live",
        ],
    ),
    // `moot bench`: a single model against a debate, on a provider it is handed.
    (
        "bench",
        &["debate", "llm", "store", "sanitize", "session", "code"],
    ),
    // Which lessons a debate is given, and how they read.
    ("lessons", &["debate", "store", "sanitize"]),
    // A debate drawn as Mermaid or DOT, from its derived views and event log.
    ("diagram", &["debate", "argue", "sanitize"]),
    ("providers", &["config", "llm", "sanitize"]),
    ("config", &["engine", "llm", "catalog", "place"]),
    // The protocols: over the engine's seam (re-exported as `protocol`), each may use the
    // machinery it needs (the dialogue's shared context, the arena directory, code debates').
    (
        "protocol",
        &[
            "debate", "argue", "engine", "catalog", "gather", "arena", "vote", "code", "spelling",
        ],
    ),
    ("gather", &["beneath", "debate", "arena"]),
    // Code debates' machinery: hooks in a work tree.
    ("code", &["sanitize", "beneath"]),
    ("arena", &["beneath"]),
];

/// Every `.rs` file under `src/`: its path there, and its code up to its unit tests (which may
/// reach anywhere: they are not part of the layering).
fn source_files() -> Vec<(std::path::PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut pending = vec![src.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text
                .find("#[cfg(test)]\nmod tests")
                .map_or(text.as_str(), |end| &text[..end]);
            files.push((
                path.strip_prefix(&src).unwrap().to_path_buf(),
                code.to_string(),
            ));
        }
    }
    files
}

/// The top-level modules each module's non-test code names through `crate::`.
fn imports() -> BTreeMap<String, BTreeMap<String, String>> {
    let mut found: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (relative, code) in source_files() {
        let first = relative.components().next().unwrap();
        let module = first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        for name in crate_names(&code) {
            if name != module {
                found
                    .entry(module.clone())
                    .or_default()
                    .entry(name)
                    .or_insert_with(|| relative.display().to_string());
            }
        }
    }
    found
}

/// Every `x` in `crate::x` and `crate::{x, y::z}`.
fn crate_names(code: &str) -> BTreeSet<String> {
    crate_names_after(code, "crate::")
}

/// Every `x` in `<prefix>x` and `<prefix>{x, y::z}`.
fn crate_names_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let ident = |text: &str| -> String {
        text.trim()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in code.match_indices(prefix) {
        // `super::x` inside `super::super::x` is not a name of its own.
        if prefix.starts_with("super") && code[..at].ends_with("super::") {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name = ident(item);
                if !name.is_empty() {
                    names.insert(name);
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

#[test]
fn every_import_follows_the_layering() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut wrong = Vec::new();
    for (module, names) in imports() {
        let Some(may) = allowed.get(module.as_str()) else {
            wrong.push(format!(
                "module {module} is not in tests/architecture.rs: place it in the layering"
            ));
            continue;
        };
        for (name, file) in names {
            if !may.contains(&name.as_str()) {
                wrong.push(format!(
                    "src/{file} imports crate::{name}, but {module} may not depend on {name} \
                     (ARCHITECTURE.md; allowed: {})",
                    may.join(", ")
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// An allowed edge no import uses is a door left open for the next one: the list says what
/// the code does, no more (`report` → `arena` stayed allowed long after it went).
#[test]
fn every_allowed_edge_is_used() {
    let found = imports();
    let unused: Vec<String> = ALLOWED
        .iter()
        .flat_map(|(module, may)| {
            let used = found.get(*module);
            may.iter()
                .filter(move |name| used.is_none_or(|names| !names.contains_key(**name)))
                .map(move |name| format!("{module} → {name}"))
        })
        .collect();
    assert!(
        unused.is_empty(),
        "allowed but not used (drop them from ALLOWED): {unused:?}"
    );
}

#[test]
fn the_allowed_edges_form_no_cycle() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    // Depth-first search for a path back to where it started.
    fn reaches(
        allowed: &BTreeMap<&str, &[&str]>,
        from: &str,
        to: &str,
        seen: &mut Vec<String>,
    ) -> bool {
        for next in allowed.get(from).copied().unwrap_or_default() {
            if *next == to {
                return true;
            }
            if !seen.iter().any(|s| s == next) {
                seen.push(next.to_string());
                if reaches(allowed, next, to, seen) {
                    return true;
                }
            }
        }
        false
    }
    for module in allowed.keys() {
        assert!(
            !reaches(&allowed, module, module, &mut Vec::new()),
            "{module} can reach itself through the allowed imports"
        );
    }
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
    source_files()
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

/// What every protocol may build on beside the seam's own items: the shared rooms of
/// `moot-engine`'s `protocol` (which cannot name a protocol: the engine crate does not depend
/// on them), re-exported under `crate::protocol`.
const PROTOCOL_SHARED: &[&str] = &["kit", "moves", "tree", "text"];

/// The rooms of `src/protocol/`: each folder is a protocol; the files beside `mod.rs`.
fn protocol_rooms() -> (Vec<String>, Vec<String>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/protocol");
    let (mut protocols, mut shared) = (Vec::new(), Vec::new());
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            protocols.push(name);
        } else if path.extension().is_some_and(|e| e == "rs") && name != "mod" {
            shared.push(name);
        }
    }
    protocols.sort();
    shared.sort();
    (protocols, shared)
}

/// The rooms of `protocol/` a file under `src/protocol/` names: `crate::protocol::x`, and
/// `super::x` (or `super::super::x` one folder deeper) where that reaches `protocol/`.
fn protocol_names(code: &str, depth: usize) -> BTreeSet<String> {
    let mut names = crate_names_after(code, "crate::protocol::");
    let reach = match depth {
        0 => "super::",
        1 => "super::super::",
        _ => "super::super::super::",
    };
    for name in crate_names_after(code, reach) {
        if name != "super" {
            names.insert(name);
        }
    }
    names
}

#[test]
fn every_protocol_is_a_folder_that_imports_no_other_protocol() {
    let (protocols, shared) = protocol_rooms();
    assert!(
        shared == ["builtin"],
        "src/protocol/ holds files other than the list of protocols (builtin.rs): {shared:?}; a \
         protocol is a folder (protocol/<name>/mod.rs), a shared room is moot-engine's"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/protocol");
    let mut wrong = Vec::new();
    let mut pending = vec![root.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let relative = path.strip_prefix(&root).unwrap();
            let parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().to_string())
                .collect();
            if parts.len() == 1 || path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let own = &parts[0];
            // `mod.rs` sits one level up from its siblings: its `super` is `protocol/`.
            let depth = parts.len() - 1 - usize::from(parts.last().unwrap() == "mod.rs");
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text
                .find("#[cfg(test)]\nmod tests")
                .map_or(text.as_str(), |end| &text[..end]);
            for name in protocol_names(code, depth) {
                if protocols.contains(&name) && &name != own {
                    wrong.push(format!(
                        "src/protocol/{} imports the {name} protocol; a protocol may import only \
                         {} and the seam",
                        relative.display(),
                        PROTOCOL_SHARED.join(", ")
                    ));
                }
            }
        }
    }
    assert!(
        !protocols.is_empty(),
        "no protocol folder found under src/protocol"
    );
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// A protocol's `run.rs` is where its steps run, and nothing else imports from it: the types
/// its rooms share (its seats, its state between rounds) have rooms of their own, so no room
/// and its run import each other.
#[test]
fn nothing_imports_from_a_protocols_run_room() {
    let (protocols, _) = protocol_rooms();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/protocol");
    let mut wrong = Vec::new();
    for protocol in &protocols {
        for entry in std::fs::read_dir(root.join(protocol)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.extension().is_none_or(|e| e != "rs") || name == "run.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text
                .find("#[cfg(test)]\nmod tests")
                .map_or(text.as_str(), |end| &text[..end]);
            for (at, _) in code.match_indices("run::") {
                let rest = &code[at + "run::".len()..];
                // `run::run(…)`: the protocol's entry calls its steps.
                if name == "mod.rs" && rest.starts_with("run(") {
                    continue;
                }
                let line = code[..at].lines().count();
                wrong.push(format!(
                    "src/protocol/{protocol}/{name}:{line} imports from run.rs"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

#[test]
fn the_protocol_scanner_reads_super_by_depth() {
    let code =
        "use super::kit;\nuse super::super::arena::Arena;\nuse crate::protocol::{panel, text};";
    assert_eq!(
        protocol_names(code, 1).into_iter().collect::<Vec<_>>(),
        vec!["arena", "panel", "text"]
    );
    assert_eq!(
        protocol_names(code, 0).into_iter().collect::<Vec<_>>(),
        vec!["kit", "panel", "text"]
    );
}

#[test]
fn the_scanner_sees_grouped_and_nested_imports() {
    let names = crate_names(
        "use crate::debate::{Act, Turn};\nuse crate::{argue, store::Store};\nlet x = crate::llm::http_client();",
    );
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        vec!["argue", "debate", "llm", "store"]
    );
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
