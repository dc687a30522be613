//! The workspace's crate graph, as Cargo reads it: each crate depends only on the moot crates
//! below it (the layering ARCHITECTURE.md draws, held by the compiler once it is a Cargo
//! edge), and every crate that needs no `unsafe` forbids it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each moot crate and the moot crates it may depend on. A crate missing here fails the test:
/// place it in the layering first.
const ALLOWED: &[(&str, &[&str])] = &[
    // The binary and the layers not yet split out of it.
    (
        "moot",
        &[
            "moot-domain",
            "moot-os",
            "moot-journal",
            "moot-llm",
            "moot-local",
            "moot-engine",
            "moot-protocols",
            "moot-session",
            "moot-tui",
            "moot-serve",
        ],
    ),
    // `moot serve`: a face over the same sessions, read back as the commands read them; no
    // protocol (the binary hands it the registry), no command line.
    (
        "moot-serve",
        &["moot-domain", "moot-os", "moot-journal", "moot-session"],
    ),
    // The workbench: a face over the session (and the journal it browses); no protocol, no
    // provider, no command line.
    (
        "moot-tui",
        &["moot-domain", "moot-os", "moot-journal", "moot-session"],
    ),
    // The session layer: a debate assembled from a request and run with the registry and the
    // embedded model's opener it is handed, so it names neither the protocols nor the engine
    // of the embedded model, and no screen or command line.
    (
        "moot-session",
        &[
            "moot-domain",
            "moot-os",
            "moot-journal",
            "moot-llm",
            "moot-engine",
        ],
    ),
    // The protocols moot ships and their machinery, over the engine's seam; they know nothing
    // of the session that runs them, the faces or the command line.
    ("moot-protocols", &["moot-domain", "moot-os", "moot-engine"]),
    // The engine, the protocol seam and the decision record: it runs a protocol it is handed
    // and names none; no screen, command line or session type crosses into it.
    (
        "moot-engine",
        &["moot-domain", "moot-os", "moot-journal", "moot-llm"],
    ),
    // The embedded model: a provider over llama.cpp and moot's kernels; only the binary
    // depends on it (the session is handed its opener).
    (
        "moot-local",
        &["moot-domain", "moot-llm", "moot-q8-0", "moot-attention"],
    ),
    // The providers: the domain's types and the OS crate's paths; no journal, no engine.
    ("moot-llm", &["moot-domain", "moot-os"]),
    // The journal: the types it stores and the lease's lock, nothing of providers or screens.
    ("moot-journal", &["moot-domain", "moot-os"]),
    // What moot asks of the operating system: the domain only (to sanitize what it prints).
    ("moot-os", &["moot-domain"]),
    // The embedded model's kernels: no moot dependency at all.
    ("moot-q8-0", &[]),
    ("moot-attention", &[]),
    // The domain: depended on by everything, depending on nothing of moot.
    ("moot-domain", &[]),
];

/// The crates allowed `unsafe`, and why: the operating system's calls (openat2, a fatal
/// signal's handler, the hook box), the embedded model (llama.cpp's FFI) and its kernels (SIMD
/// intrinsics).
const UNSAFE_ALLOWED: &[&str] = &["moot-os", "moot-local", "moot-q8-0", "moot-attention"];

/// Every workspace package: its name, its library's root file, and the moot packages it
/// depends on (normal and build dependencies; tests may reach further).
fn packages() -> Vec<(String, PathBuf, BTreeSet<String>)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let members: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m.as_str())
        .collect();
    let mut found = Vec::new();
    for package in metadata["packages"].as_array().unwrap() {
        let id = package["id"].as_str().unwrap();
        if !members.contains(id) {
            continue;
        }
        let name = package["name"].as_str().unwrap().to_string();
        let lib = package["targets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["kind"].as_array().unwrap().iter().any(|k| k == "lib"))
            .map(|t| PathBuf::from(t["src_path"].as_str().unwrap()))
            .unwrap_or_default();
        let moot_deps = package["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"].as_str() != Some("dev"))
            .filter_map(|d| d["name"].as_str())
            .filter(|d| d.starts_with("moot"))
            .map(str::to_string)
            .collect();
        found.push((name, lib, moot_deps));
    }
    found
}

#[test]
fn every_crate_depends_only_on_the_crates_below_it() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let packages = packages();
    assert!(
        packages.len() >= ALLOWED.len(),
        "cargo metadata lists {} workspace packages",
        packages.len()
    );
    let mut wrong = Vec::new();
    for (name, _, deps) in &packages {
        let Some(may) = allowed.get(name.as_str()) else {
            wrong.push(format!(
                "{name} is not in tests/workspace.rs: place it in the layering"
            ));
            continue;
        };
        for dep in deps {
            if !may.contains(&dep.as_str()) {
                wrong.push(format!(
                    "{name} depends on {dep}, which the layering does not allow (allowed: {})",
                    may.join(", ")
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

#[test]
fn every_crate_that_needs_no_unsafe_forbids_it() {
    let mut wrong = Vec::new();
    for (name, lib, _) in packages() {
        if UNSAFE_ALLOWED.contains(&name.as_str()) || lib == Path::new("") {
            continue;
        }
        let text = std::fs::read_to_string(&lib).unwrap();
        if !text.contains("#![forbid(unsafe_code)]") {
            wrong.push(format!(
                "{} ({name}) does not say #![forbid(unsafe_code)]",
                lib.display()
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

/// Where `code` says `Result<_, String>` (the error a bare string), by byte offset: the
/// generic arguments read with their nesting, so `Result<Vec<(String, u8)>, String>` counts
/// and `Result<String, Error>` does not.
fn string_errors(code: &str) -> Vec<usize> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("Result<") {
        if code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let (mut depth, mut top_comma, mut end) = (1usize, None, None);
        let body = &code[at + "Result<".len()..];
        let mut previous = ' ';
        for (i, c) in body.char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                // `->` inside a closure's type is no closing bracket.
                '>' if previous == '-' => {}
                '>' | ')' | ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i);
                        break;
                    }
                }
                ',' if depth == 1 => top_comma = Some(i),
                _ => {}
            }
            previous = c;
        }
        if let (Some(comma), Some(end)) = (top_comma, end)
            && matches!(
                body[comma + 1..end].trim(),
                "String" | "std::string::String"
            )
        {
            found.push(at);
        }
    }
    // A module-level alias that makes a string the error: `type Rule = String;` (an
    // associated type in an impl stands indented, and is no alias).
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        let item = line
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub ");
        if item.starts_with("type ") && item.trim_end().ends_with("= String;") {
            found.push(offset);
        }
        offset += line.len();
    }
    found
}

/// Errors are types (issue 70): no library or binary source
/// returns `Result<_, String>` or aliases a string as its error, so a caller can tell one
/// failure from another and a message is written once, where it is shown. Tests may.
#[test]
fn no_error_is_a_bare_string() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    assert!(files.len() > 100, "only {} source files found", files.len());
    let mut wrong = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text
            .find("#[cfg(test)]\nmod tests")
            .map_or(text.as_str(), |end| &text[..end]);
        for at in string_errors(code) {
            let line = code[..at].lines().count().max(1);
            let shown = file.strip_prefix(root).unwrap_or(&file).display();
            wrong.push(format!("{shown}:{line}: give it a typed error (thiserror)"));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

#[test]
fn the_string_error_reader_counts_what_it_should() {
    let code = "fn a() -> Result<Vec<(String, u8)>, String> {}\n\
                fn b() -> Result<String, Error> {}\n\
                type F = dyn Fn(&str) -> Result<Value, String>;\n\
                fn c() -> io::Result<String> {}\n\
                fn d() -> MyResult<u8, String> {}\n\
                pub type Rule = String;\n\
                impl V { type Value = String; }\n";
    assert_eq!(string_errors(code).len(), 3, "a, F and Rule");
}
