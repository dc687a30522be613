//! The layering inside the protocols' crate: its machinery (`arena`, `code`, `gather`) leans on
//! no protocol, and one level into `protocol/` every protocol is a folder that imports the
//! shared rooms and the seam (`moot-engine`'s), never another protocol, and nothing imports
//! from a protocol's `run.rs`.

#[path = "../../../tests/support/layering.rs"]
mod layering;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// This crate's sources.
fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Each top-level module of this crate and the modules it may import: the protocols over the
/// machinery, the machinery over the OS crate and the domain (re-exported here under their
/// names), and none of it over a protocol.
const ALLOWED: &[(&str, &[&str])] = &[
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

/// Every import an allowed edge, every allowed edge used, no cycle.
#[test]
fn the_layering_holds() {
    layering::holds(&src(), ALLOWED);
}

/// What every protocol may build on beside the seam's own items: the shared rooms of
/// `moot-engine`'s `protocol` (which cannot name a protocol: the engine crate does not depend
/// on them), re-exported under `crate::protocol`.
const PROTOCOL_SHARED: &[&str] = &["kit", "moves", "tree", "text"];

/// The rooms of `src/protocol/`: each folder is a protocol; the files beside `mod.rs`.
fn protocol_rooms() -> (Vec<String>, Vec<String>) {
    let dir = src().join("protocol");
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
    let mut names = layering::crate_names_after(code, "crate::protocol::");
    let reach = match depth {
        0 => "super::",
        1 => "super::super::",
        _ => "super::super::super::",
    };
    for name in layering::crate_names_after(code, reach) {
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
    let mut wrong = Vec::new();
    for (relative, code) in layering::source_files(&src().join("protocol")) {
        let parts: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().to_string())
            .collect();
        if parts.len() == 1 {
            continue;
        }
        let own = &parts[0];
        // `mod.rs` sits one level up from its siblings: its `super` is `protocol/`.
        let depth = parts.len() - 1 - usize::from(parts.last().unwrap() == "mod.rs");
        for name in protocol_names(&code, depth) {
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
    let root = src().join("protocol");
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
                // `run::run(…)` or `runs!(run::run)`: the protocol's entry calls its steps.
                if name == "mod.rs" && (rest.starts_with("run(") || rest.starts_with("run)")) {
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
