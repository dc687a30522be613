//! The documentation's runnable examples (issue 69 item 9): every fenced `sh` block in README.md
//! and `docs/` marked `<!-- runnable -->` runs, a page's blocks in order in one shell, against
//! the suite's stand-in server, with the built `moot` first on PATH.

use crate::*;

/// The marker a runnable block carries on the line before its fence.
const MARK: &str = "<!-- runnable -->";

/// README.md and every page under `docs/`, by path from the repository's root.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    let mut folders = vec![root.join("docs")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

/// The runnable blocks of a page, in order; a marker not followed by a `sh` fence is an error
/// (an example someone meant to be checked, silently not run).
fn runnable_blocks(page: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(page).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        if line.trim() != MARK {
            continue;
        }
        if lines.get(at + 1).map(|l| l.trim()) != Some("```sh") {
            return Err(format!(
                "{}:{}: {MARK} is not followed by a ```sh block",
                page.display(),
                at + 1
            ));
        }
        let body: Vec<&str> = lines[at + 2..]
            .iter()
            .take_while(|l| l.trim() != "```")
            .copied()
            .collect();
        blocks.push(body.join("\n"));
    }
    Ok(blocks)
}

#[test]
fn every_runnable_example_in_the_readme_and_the_docs_runs() {
    let server = StandIn::start_in_background(Behaviour::default());
    let binary_dir = Path::new(env!("CARGO_BIN_EXE_moot")).parent().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut ran = Vec::new();
    for page in pages() {
        let blocks = runnable_blocks(&page).unwrap_or_else(|e| panic!("{e}"));
        if blocks.is_empty() {
            continue;
        }
        // Each page in a home of its own, where the repository's demo scripts are at hand.
        let home = Home::new();
        std::os::unix::fs::symlink(root.join("assets"), home.path().join("assets")).unwrap();
        let script = format!("set -euo pipefail\n{}\n", blocks.join("\n"));
        let output = home
            .prepared(Command::new("bash"), Some(&server))
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    binary_dir.display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .args(["-c", &script])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let shown = page.strip_prefix(root).unwrap().display().to_string();
        assert!(
            output.status.success(),
            "{shown}: its runnable examples failed ({}):\n{script}\n--- stdout\n{}\n--- stderr\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            stderr(&output)
        );
        ran.push((shown, blocks.len()));
    }
    // The pages that promise examples have them; a marker lost in an edit shows here.
    for page in [
        "README.md",
        "docs/running.md",
        "docs/journal-and-audit.md",
        "docs/protocols/panel.md",
        "docs/embedded-model.md",
    ] {
        assert!(
            ran.iter().any(|(shown, _)| shown == page),
            "{page} has no runnable example; ran: {ran:?}"
        );
    }
}

/// The check above can fail: a block that exits non-zero is caught, and so is a marker with
/// no block under it.
#[test]
fn a_broken_example_or_a_stray_marker_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.md");
    std::fs::write(&page, format!("{MARK}\n```toml\nx = 1\n```\n")).unwrap();
    assert!(runnable_blocks(&page).unwrap_err().contains("page.md:1"));
    std::fs::write(&page, format!("text\n{MARK}\n```sh\nmoot lst\n```\n")).unwrap();
    let blocks = runnable_blocks(&page).unwrap();
    assert_eq!(blocks, vec!["moot lst".to_string()]);
    let home = Home::new();
    let output = home
        .command(None)
        .args(blocks[0].split_whitespace().skip(1))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

/// Every relative link in README.md and `docs/` leads to a file that is there (the reference
/// moved out of the README; a link left pointing at the old place shows here).
#[test]
fn every_relative_link_in_the_docs_leads_somewhere() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (at, _) in text.match_indices("](") {
            let rest = &text[at + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = &rest[..end];
            if target.contains("://") || target.starts_with('#') || target.contains(' ') {
                continue;
            }
            let file = target.split('#').next().unwrap();
            if !page.parent().unwrap().join(file).exists() {
                broken.push(format!(
                    "{} → {target}",
                    page.strip_prefix(root).unwrap().display()
                ));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing: {broken:?}");
}
