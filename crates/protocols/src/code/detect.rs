//! What a code debate can tell from the project itself: its test command when none is given,
//! and a file's language (for fences and syntax highlighting).

use std::path::Path;

/// The project's test command, from the files at its root: Cargo.toml → `cargo test`,
/// go.mod → `go test ./...`, a package.json with a test script → `npm test`, a Python project
/// with tests → `pytest -q`. None when nothing says.
pub fn test_command(root: &Path) -> Option<String> {
    let has = |name: &str| root.join(name).exists();
    if has("Cargo.toml") {
        return Some("cargo test".into());
    }
    if has("go.mod") {
        return Some("go test ./...".into());
    }
    if has("package.json") {
        let text = std::fs::read_to_string(root.join("package.json")).unwrap_or_default();
        let script = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v["scripts"]["test"].as_str().map(str::to_string));
        if script.is_some_and(|s| !s.contains("no test specified")) {
            return Some("npm test".into());
        }
    }
    let python = [
        "pyproject.toml",
        "pytest.ini",
        "setup.cfg",
        "setup.py",
        "tox.ini",
    ]
    .iter()
    .any(|f| has(f));
    if python && (has("tests") || has("test")) {
        return Some("pytest -q".into());
    }
    None
}

/// A file's language by its extension, as fences name it.
pub fn language(path: &str) -> &'static str {
    match Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
    {
        "rs" => "rust",
        "py" => "python",
        "go" => "go",
        "js" | "mjs" | "cjs" => "javascript",
        "ts" | "tsx" => "typescript",
        "java" => "java",
        "c" | "h" => "c",
        "cc" | "cpp" | "hpp" => "cpp",
        "rb" => "ruby",
        "sh" => "bash",
        "toml" => "toml",
        "json" => "json",
        _ => "text",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_command_is_read_from_the_project() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(test_command(dir.path()), None);
        std::fs::write(
            dir.path().join("package.json"),
            r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#,
        )
        .unwrap();
        assert_eq!(
            test_command(dir.path()),
            None,
            "npm's placeholder is no test"
        );
        std::fs::write(
            dir.path().join("package.json"),
            r#"{"scripts": {"test": "jest"}}"#,
        )
        .unwrap();
        assert_eq!(test_command(dir.path()).as_deref(), Some("npm test"));
        std::fs::write(dir.path().join("go.mod"), "module x\n").unwrap();
        assert_eq!(test_command(dir.path()).as_deref(), Some("go test ./..."));
        std::fs::write(dir.path().join("Cargo.toml"), "[package]\n").unwrap();
        assert_eq!(test_command(dir.path()).as_deref(), Some("cargo test"));
        let py = tempfile::tempdir().unwrap();
        std::fs::write(py.path().join("pyproject.toml"), "").unwrap();
        assert_eq!(
            test_command(py.path()),
            None,
            "a Python project without tests"
        );
        std::fs::create_dir(py.path().join("tests")).unwrap();
        assert_eq!(test_command(py.path()).as_deref(), Some("pytest -q"));
    }

    #[test]
    fn languages_come_from_extensions() {
        assert_eq!(language("src/retry.rs"), "rust");
        assert_eq!(language("slug.py"), "python");
        assert_eq!(language("Makefile"), "text");
    }
}
