//! Applying a chosen version to the user's tree: in git, as a patch from the debate's branch;
//! outside it, file by file, each checked against the file the debate started from, since
//! there is no branch to patch from.

use super::versions::{Version, commit_of, files_at};
use super::worktree::{ApplyError, WorkTree, apply, branch_base};
use std::path::Path;

/// Where a version is applied from and to.
pub struct Source<'a> {
    /// The user's tree.
    pub origin: &'a Path,
    /// `moot/<id>` when the debate ran in git; None for a copy.
    pub branch: Option<&'a str>,
    /// The files the debate read when it started.
    pub base: &'a [(String, String)],
    pub versions: &'a [Version],
}

/// Applies version `number` to the user's tree, refusing changes it would overwrite unless
/// `force`; the files it changed.
pub fn apply_version(
    source: &Source<'_>,
    number: u32,
    force: bool,
) -> Result<Vec<String>, ApplyError> {
    let Some(branch) = source.branch else {
        let target = files_at(source.base, source.versions, number);
        return apply_files(source.origin, source.base, &target, force);
    };
    let base = branch_base(source.origin, branch).map_err(|_| {
        ApplyError::Git(format!(
            "{} has no branch {branch} to apply from (was it deleted?); `moot code versions` still lists the versions from the journal",
            source.origin.display()
        ))
    })?;
    // A version that changed nothing has no commit of its own, nor anything to apply.
    match commit_of(source.versions, number) {
        Some(target) => apply(source.origin, &base, &target, force),
        None => Ok(Vec::new()),
    }
}

/// Writes the files `target` changed from `base` (the files the debate read when it started)
/// into `origin`. A file that changed since then, or that the debate never read but that
/// exists, would lose work: refused (nothing is written) unless `force`. Returns the files
/// written.
pub fn apply_files(
    origin: &Path,
    base: &[(String, String)],
    target: &[(String, String)],
    force: bool,
) -> Result<Vec<String>, ApplyError> {
    // Paths came from model output once; they are checked again against the user's tree,
    // symlinks included.
    let tree = WorkTree::copy_at(origin);
    let mut writes = Vec::new();
    let mut changed_since = Vec::new();
    for (path, content) in target {
        let started = base.iter().find(|(p, _)| p == path).map(|(_, c)| c);
        if started == Some(content) {
            continue;
        }
        let at = tree.resolve(path).map_err(ApplyError::Conflict)?;
        let now = match std::fs::read_to_string(&at) {
            Ok(now) => Some(now),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(ApplyError::Conflict(format!("cannot read {path}: {e}"))),
        };
        if now.as_ref() == Some(content) {
            continue;
        }
        if now.as_ref() != started {
            changed_since.push(match started {
                Some(_) => format!("{path} changed since the debate started"),
                None => format!("{path} exists but the debate never read it"),
            });
        }
        writes.push((path.clone(), at, content));
    }
    if !changed_since.is_empty() && !force {
        return Err(ApplyError::Changed(changed_since));
    }
    for (path, at, content) in &writes {
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| ApplyError::Conflict(format!("cannot create {path}'s folder: {e}")))?;
        }
        std::fs::write(at, content)
            .map_err(|e| ApplyError::Conflict(format!("cannot write {path}: {e}")))?;
    }
    Ok(writes.into_iter().map(|(path, _, _)| path).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(p, c)| (p.to_string(), c.to_string()))
            .collect()
    }

    #[test]
    fn a_version_lands_only_on_files_as_the_debate_found_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("calc.sh"), "old\n").unwrap();
        let base = files(&[("calc.sh", "old\n")]);
        let target = files(&[("calc.sh", "new\n"), ("tests/red.sh", "t\n")]);
        let written = apply_files(root, &base, &target, false).unwrap();
        assert_eq!(written, ["calc.sh", "tests/red.sh"]);
        assert_eq!(
            std::fs::read_to_string(root.join("calc.sh")).unwrap(),
            "new\n"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("tests/red.sh")).unwrap(),
            "t\n"
        );
        // Applied again: nothing left to write.
        assert!(apply_files(root, &base, &target, false).unwrap().is_empty());

        // The person changed calc.sh meanwhile, and a file the debate never read exists:
        // refused, nothing written, until --force.
        std::fs::write(root.join("calc.sh"), "mine\n").unwrap();
        std::fs::write(root.join("tests/red.sh"), "theirs\n").unwrap();
        let refused = apply_files(root, &base, &target, false).unwrap_err();
        let ApplyError::Changed(why) = &refused else {
            panic!("{refused:?}")
        };
        assert_eq!(
            why,
            &[
                "calc.sh changed since the debate started",
                "tests/red.sh exists but the debate never read it"
            ]
        );
        assert!(refused.to_string().contains("--force"), "{refused}");
        assert_eq!(
            std::fs::read_to_string(root.join("calc.sh")).unwrap(),
            "mine\n"
        );
        apply_files(root, &base, &target, true).unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("calc.sh")).unwrap(),
            "new\n"
        );
    }

    #[cfg(unix)]
    #[test]
    fn paths_that_leave_the_tree_are_refused_even_with_force() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        for path in ["../x.sh", "/etc/x", "link/x.sh"] {
            let target = files(&[(path, "x\n")]);
            assert!(
                matches!(
                    apply_files(dir.path(), &[], &target, true),
                    Err(ApplyError::Conflict(_))
                ),
                "{path}"
            );
        }
        assert!(!outside.path().join("x.sh").exists());
    }
}
