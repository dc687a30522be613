//! Reading a crate's module layering from its sources: which top-level modules each module
//! names through `crate::` (unit tests aside), against a table of allowed edges. Shared by the
//! tests that hold the layering inside a crate (`tests/architecture.rs`, and
//! `crates/protocols/tests/rooms.rs`, which includes this file by path).

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `src`: its path there, and its code up to its unit tests (which may
/// reach anywhere: they are not part of the layering).
pub fn source_files(src: &Path) -> Vec<(PathBuf, String)> {
    let src = src.to_path_buf();
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

/// The top-level modules each module's non-test code under `src` names through `crate::`,
/// each with the first file that does.
pub fn imports(src: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut found: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (relative, code) in source_files(src) {
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
pub fn crate_names(code: &str) -> BTreeSet<String> {
    crate_names_after(code, "crate::")
}

/// Every `x` in `<prefix>x` and `<prefix>{x, y::z}`.
pub fn crate_names_after(code: &str, prefix: &str) -> BTreeSet<String> {
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

/// The imports under `src` against the layering `allowed`: each one it does not allow, said
/// with its file; a module it does not place is one too.
pub fn against_the_layering(src: &Path, allowed: &[(&str, &[&str])]) -> Vec<String> {
    let allowed: BTreeMap<&str, &[&str]> = allowed.iter().copied().collect();
    let mut wrong = Vec::new();
    for (module, names) in imports(src) {
        let Some(may) = allowed.get(module.as_str()) else {
            wrong.push(format!(
                "module {module} is not in the layering: place it in the test's table"
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
    wrong
}

/// The edges of `allowed` no import under `src` uses: a door left open for the next one (the
/// list says what the code does, no more; `report` → `arena` stayed allowed long after it
/// went).
pub fn unused_edges(src: &Path, allowed: &[(&str, &[&str])]) -> Vec<String> {
    let found = imports(src);
    allowed
        .iter()
        .flat_map(|(module, may)| {
            let used = found.get(*module);
            may.iter()
                .filter(move |name| used.is_none_or(|names| !names.contains_key(**name)))
                .map(move |name| format!("{module} → {name}"))
        })
        .collect()
}

/// Holds the sources under `src` to the layering `allowed`: every import an allowed edge, every
/// allowed edge used (a door left open is the next back-arrow's way in), and no cycle.
pub fn holds(src: &Path, allowed: &[(&str, &[&str])]) {
    let wrong = against_the_layering(src, allowed);
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
    let unused = unused_edges(src, allowed);
    assert!(
        unused.is_empty(),
        "allowed but not used (drop them from ALLOWED): {unused:?}"
    );
    let cycles = cycles(allowed);
    assert!(cycles.is_empty(), "reach themselves: {cycles:?}");
}

/// The modules of `allowed` that can reach themselves through its edges.
pub fn cycles(allowed: &[(&str, &[&str])]) -> Vec<String> {
    let allowed: BTreeMap<&str, &[&str]> = allowed.iter().copied().collect();
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
    allowed
        .keys()
        .filter(|module| reaches(&allowed, module, module, &mut Vec::new()))
        .map(|module| module.to_string())
        .collect()
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
