//! Applying a chosen version to the user's tree: in git, as a patch from the commits that hold
//! the debate's versions; from the journal (outside git, or with those commits gone), file by
//! file, each checked against the file the debate started from.

use super::git::{self, Repo};
use super::history::History;
use super::versions::{Version, commit_of, files_at};
use super::worktree::WorkTree;
use std::path::Path;

/// Where a version is applied from and to.
pub struct Source<'a> {
    /// The user's tree.
    pub origin: &'a Path,
    /// Where the debate's versions are committed (the journal when no git holds them).
    pub history: &'a History,
    /// The files the debate read when it started.
    pub base: &'a [(String, String)],
    pub versions: &'a [Version],
}

/// Why a version could not be applied to the user's tree.
#[derive(Debug, PartialEq)]
pub enum ApplyError {
    /// The user's tree has uncommitted changes (`--force` applies anyway).
    Dirty(Vec<String>),
    /// Outside git: files not as the debate found them (`--force` overwrites them).
    Changed(Vec<String>),
    /// The patch does not apply cleanly; nothing was changed.
    Conflict(String),
    Git(String),
}

impl std::fmt::Display for ApplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApplyError::Dirty(files) => write!(
                f,
                "your work tree has uncommitted changes ({}); commit or stash them, or apply with --force",
                files.join(", ")
            ),
            ApplyError::Changed(files) => write!(
                f,
                "{}; applying would overwrite them, so nothing was changed (apply with --force to overwrite)",
                files.join("; ")
            ),
            ApplyError::Conflict(detail) => write!(
                f,
                "the version does not apply cleanly to your tree, so nothing was changed: {detail}"
            ),
            ApplyError::Git(detail) => write!(f, "{detail}"),
        }
    }
}

/// Applies version `number` to the user's tree, refusing changes it would overwrite unless
/// `force`; the files it changed. From git it is a patch; from the journal, its files.
pub fn apply_version(
    source: &Source<'_>,
    number: u32,
    force: bool,
) -> Result<Vec<String>, ApplyError> {
    if *source.history == History::Journal {
        let target = files_at(source.base, source.versions, number);
        return apply_files(source.origin, source.base, &target, force);
    }
    let base = source.history.base().map_err(|why| {
        ApplyError::Git(format!(
            "{} lost the commit the debate started from ({why}); `moot code versions` still lists the versions from the journal",
            source.history.describe()
        ))
    })?;
    // A version that changed nothing has no commit of its own, nor anything to apply.
    match commit_of(source.versions, number) {
        Some(target) => apply_patch(source.origin, source.history, &base, &target, force),
        None => Ok(Vec::new()),
    }
}

/// Applies the change from `base` to `version` (commits in `history`) to the user's tree at
/// `origin` as a patch: refused on a dirty tree unless `force`, and on any conflict (checked
/// first, so a refused patch changes nothing). Returns the files it changed.
pub fn apply_patch(
    origin: &Path,
    history: &History,
    base: &str,
    version: &str,
    force: bool,
) -> Result<Vec<String>, ApplyError> {
    let user = Repo::In(origin);
    // Untracked files are not changes a patch could lose (a new decision record, say); a
    // patch that would create one is a conflict `git apply --check` reports.
    // Untrimmed: a porcelain line is two status columns, a space and the path (" M calc.sh").
    let dirty: Vec<String> = git::run_raw(user, &["status", "--porcelain", "--untracked-files=no"])
        .map_err(|e| ApplyError::Git(e.to_string()))?
        .lines()
        .map(|l| l.get(3..).unwrap_or(l).to_string())
        .collect();
    if !dirty.is_empty() && !force {
        return Err(ApplyError::Dirty(dirty));
    }
    let (patch, files) = history
        .patch(base, version)
        .map_err(|e| ApplyError::Git(e.to_string()))?;
    if patch.trim().is_empty() {
        return Ok(Vec::new());
    }
    let patch_file = tempfile::NamedTempFile::new().map_err(|e| ApplyError::Git(e.to_string()))?;
    std::fs::write(patch_file.path(), &patch).map_err(|e| ApplyError::Git(e.to_string()))?;
    let path = patch_file.path().to_string_lossy().to_string();
    // A git configuration file a version holds (one stored before versions refused them) is
    // left out, at any depth.
    let excludes: Vec<String> = super::worktree::GIT_CONFIG_FILES
        .iter()
        .flat_map(|name| [format!("--exclude={name}"), format!("--exclude=*/{name}")])
        .collect();
    let with = |extra: &[&'static str]| -> Vec<String> {
        let mut all = vec!["apply".to_string()];
        all.extend(excludes.iter().cloned());
        all.extend(extra.iter().map(|s| s.to_string()));
        all.push(path.clone());
        all
    };
    for args in [with(&["--check"]), with(&[])] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        git::run(user, &args).map_err(|e| ApplyError::Conflict(e.to_string()))?;
    }
    Ok(files
        .into_iter()
        .filter(|f| super::worktree::configures_git(f).is_none())
        .collect())
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
        // Never a git configuration file (one a version stored before they were refused).
        if super::worktree::configures_git(path).is_some() {
            continue;
        }
        let started = base.iter().find(|(p, _)| p == path).map(|(_, c)| c);
        if started == Some(content) {
            continue;
        }
        let at = tree
            .resolve(path)
            .map_err(|e| ApplyError::Conflict(e.to_string()))?;
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
    // Written beneath the tree with no symlink on the way, whatever changed since the check.
    for (path, _, content) in &writes {
        tree.write(path, content)
            .map_err(|e| ApplyError::Conflict(e.to_string()))?;
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
        // A git configuration file a version holds is never applied, at any depth.
        let attributes = files(&[
            (".gitattributes", "*.py diff=evil\n"),
            ("sub/.gitmodules", "[submodule \"x\"]\n"),
        ]);
        assert!(
            apply_files(root, &base, &attributes, false)
                .unwrap()
                .is_empty()
        );
        assert!(!root.join(".gitattributes").exists() && !root.join("sub").exists());

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
