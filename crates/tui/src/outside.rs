//! Programs the workbench hands the terminal to and takes it back from: the pager and the
//! editor for a record or draft, and the pager on a private copy of a file the shared context
//! cites (read through `beneath::read_cited`, so a link never leads outside the
//! directory it came from).

use super::app::App;
use super::run::{Term, restore_terminal, take_terminal_back};

/// Why a cited file cannot be shown, for the notice line.
#[derive(Debug, thiserror::Error)]
#[error("{path} cannot be opened: {why}")]
struct SourceUnopened {
    path: String,
    why: String,
}

/// A cited file in $PAGER at its line, shown from the private copy `source_copy` makes.
pub(super) fn open_source(terminal: &mut Term, app: &mut App, root: &str, path: &str, line: u32) {
    let copy = match source_copy(std::path::Path::new(root), path) {
        Ok(copy) => copy,
        Err(why) => {
            app.notice = Some(why.to_string());
            return;
        }
    };
    let line_arg = |name: &str| {
        // Pagers and editors that take `+LINE` start at the cited line.
        [
            "less", "more", "most", "vi", "vim", "nvim", "view", "nano", "bat",
        ]
        .contains(&name)
        .then(|| {
            if name == "bat" {
                format!("--highlight-line={line}")
            } else {
                format!("+{line}")
            }
        })
    };
    run_outside(terminal, app, "PAGER", "less", copy.path(), line_arg);
}

/// The most of a cited source file the pager is shown.
const SOURCE_CAP: u64 = 16 * 1024 * 1024;

/// A private copy of cited file `path` for the pager. The path came from gathering, but it is
/// checked again here: relative, read beneath the debate's directory `root` with no symlink
/// anywhere on the way (`beneath::read_cited`), at most `SOURCE_CAP`. The copy is a fresh
/// file of moot's own (O_EXCL, 0600) named like the source, so pagers that highlight by
/// extension still do, and nothing swapped in after the check reaches the pager.
fn source_copy(
    root: &std::path::Path,
    path: &str,
) -> Result<tempfile::NamedTempFile, SourceUnopened> {
    let relative = std::path::Path::new(path);
    let refused = |why: String| SourceUnopened {
        path: path.to_string(),
        why,
    };
    let bytes =
        crate::beneath::read_cited(root, path, SOURCE_CAP).map_err(|e| refused(e.to_string()))?;
    let name = relative
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    tempfile::Builder::new()
        .prefix("moot-source-")
        .suffix(&format!("-{name}"))
        .tempfile()
        .and_then(|mut copy| {
            std::io::Write::write_all(&mut copy, &bytes)?;
            Ok(copy)
        })
        .map_err(|e| refused(format!("cannot make a copy to page: {e}")))
}

pub(super) fn outside(
    terminal: &mut Term,
    app: &mut App,
    variable: &str,
    fallback: &str,
    markdown: &str,
    path: Option<String>,
) {
    if let Some(path) = path.filter(|p| std::path::Path::new(p).exists()) {
        run_outside(
            terminal,
            app,
            variable,
            fallback,
            std::path::Path::new(&path),
            |_| None,
        );
        return;
    }
    // No record file: the synthesis goes to a fresh file of moot's own (O_EXCL, 0600, a
    // random name), never a guessable path in the shared temporary directory.
    let written = tempfile::Builder::new()
        .prefix("moot-synthesis-")
        .suffix(".md")
        .tempfile()
        .and_then(|mut file| {
            std::io::Write::write_all(&mut file, crate::sanitize::clean(markdown).as_bytes())?;
            Ok(file)
        });
    match written {
        Ok(file) => run_outside(terminal, app, variable, fallback, file.path(), |_| None),
        Err(e) => app.notice = Some(format!("cannot write the synthesis for {variable}: {e}")),
    }
}

/// Leaves the terminal to `$variable` (or `fallback`) on `file`, with the extra argument
/// `extra` gives for the program's name, and comes back to the workbench as it was.
fn run_outside(
    terminal: &mut Term,
    app: &mut App,
    variable: &str,
    fallback: &str,
    file: &std::path::Path,
    extra: impl Fn(&str) -> Option<String>,
) {
    let program = std::env::var(variable)
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| fallback.to_string());
    let mut words = program.split_whitespace();
    let Some(command) = words.next() else {
        return;
    };
    let name = std::path::Path::new(command)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(command);
    let extra = extra(name);
    restore_terminal();
    let status = std::process::Command::new(command)
        .args(words)
        .args(extra)
        .arg(file)
        .status();
    take_terminal_back(terminal);
    app.notice = Some(match status {
        Ok(_) => format!("back from {command}"),
        Err(e) => format!("cannot run {command} (${variable}): {e}"),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cited file reaches the pager only as a private copy of a real file under the
    /// debate's directory: a symlink on the way, `..` or an absolute path is refused.
    #[test]
    fn a_cited_file_is_paged_from_a_copy_and_never_through_a_symlink() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("src")).unwrap();
        std::fs::write(root.path().join("src/lib.rs"), "fn cited() {}\n").unwrap();
        std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("out")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            root.path().join("link.txt"),
        )
        .unwrap();
        let copy = source_copy(root.path(), "src/lib.rs").unwrap();
        assert_eq!(
            std::fs::read_to_string(copy.path()).unwrap(),
            "fn cited() {}\n"
        );
        assert!(copy.path().to_string_lossy().ends_with("-lib.rs"));
        assert_ne!(copy.path(), root.path().join("src/lib.rs"));
        for bad in [
            "out/secret.txt",
            "link.txt",
            "../secret.txt",
            "/etc/hostname",
        ] {
            let why = source_copy(root.path(), bad).unwrap_err();
            let why = why.to_string();
            assert!(why.starts_with(&format!("{bad} cannot be opened")), "{why}");
        }
        assert!(
            source_copy(root.path(), "link.txt")
                .unwrap_err()
                .to_string()
                .contains("symlink")
        );
        assert!(source_copy(root.path(), "missing.rs").is_err());
    }
}
