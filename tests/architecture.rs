//! The layering of ARCHITECTURE.md, enforced: every `crate::` import of every module (tests
//! aside) must be an edge allowed here, and the allowed edges form no cycle. A new back-arrow
//! fails this test instead of slipping in.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each top-level module and the modules it may import. Read downwards: faces at the top,
/// the domain types at the bottom.
const ALLOWED: &[(&str, &[&str])] = &[
    // The faces and the command line.
    (
        "tui",
        &[
            "debate", "argue", "store", "session", "replay", "sanitize", "signals", "config",
            "beneath",
        ],
    ),
    ("headless", &["debate", "session", "sanitize", "signals"]),
    (
        "commands",
        &[
            "debate", "store", "report", "catalog", "config", "sanitize", "cli", "llm", "protocol",
            "session", "arena", "audit", "lessons", "code",
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
    ("signals", &["sanitize"]),
    // Reading stored debates back.
    ("replay", &["debate", "store", "session", "llm"]),
    ("report", &["debate", "argue", "store", "sanitize", "arena"]),
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
        ],
    ),
    // `moot bench`: a single model against a debate, on a provider it is handed.
    ("bench", &["debate", "llm", "store", "sanitize", "session"]),
    // Which lessons a debate is given, and how they read.
    ("lessons", &["debate", "store", "gather", "sanitize"]),
    ("decision", &["debate", "sanitize"]),
    ("providers", &["config", "llm", "sanitize"]),
    ("config", &["engine", "llm"]),
    // A protocol reads its own config table and offers its own follow-up draft.
    (
        "protocol",
        &[
            "debate", "argue", "llm", "engine", "catalog", "config", "decision", "gather", "arena",
            "vote", "code",
        ],
    ),
    ("gather", &["beneath"]),
    // Code debates' machinery: hooks in a work tree.
    ("code", &["sanitize", "beneath"]),
    ("arena", &["beneath"]),
    ("vote", &[]),
    ("catalog", &["config"]),
    ("engine", &["debate", "argue", "llm", "store", "sanitize"]),
    ("store", &["debate", "llm", "sanitize"]),
    ("llm", &["debate", "sanitize", "paths"]),
    ("argue", &["debate"]),
    ("debate", &[]),
    ("sanitize", &[]),
    ("paths", &[]),
    ("beneath", &[]),
];

/// The top-level modules each module's non-test code names through `crate::`.
fn imports() -> BTreeMap<String, BTreeMap<String, String>> {
    let mut found: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
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
            let relative = path.strip_prefix(&src).unwrap();
            let first = relative.components().next().unwrap();
            let module = first
                .as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string();
            if module == "lib" || module == "main" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            // Unit tests may reach anywhere: they are not part of the layering.
            let code = text
                .find("#[cfg(test)]\nmod tests")
                .map_or(text.as_str(), |end| &text[..end]);
            for name in crate_names(code) {
                if name != module {
                    found
                        .entry(module.clone())
                        .or_default()
                        .entry(name)
                        .or_insert_with(|| relative.display().to_string());
                }
            }
        }
    }
    found
}

/// Every `x` in `crate::x` and `crate::{x, y::z}`.
fn crate_names(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let ident = |text: &str| -> String {
        text.trim()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
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
