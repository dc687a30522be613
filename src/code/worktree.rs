//! A code debate's own work tree: a git worktree on branch `moot/<debate-id>` (or, outside
//! git, a temporary copy), where versions are written and committed, so that the user's files
//! are never touched during a debate. Paths come from model output, so each is checked to stay
//! inside the tree: no absolute paths, no `..`, nothing under `.git`, no symlinked directories.

use std::path::{Component, Path, PathBuf};
use std::process::Command;

/// How the tree was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A git worktree on its own branch.
    Git,
    /// A copy of a directory that is not a git work tree.
    Copy,
}

/// A debate's work tree.
#[derive(Debug)]
pub struct WorkTree {
    pub root: PathBuf,
    pub kind: Kind,
    /// The user's repository (or directory) it came from.
    pub origin: PathBuf,
    /// `moot/<debate-id>` for a git worktree.
    pub branch: Option<String>,
    /// Paths moot wrote for the model since the last commit: all a commit may stage.
    written: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

/// Why a path from a model was refused.
pub fn safe_path(path: &str) -> Result<PathBuf, String> {
    let trimmed = path.trim();
    if trimmed.is_empty() || trimmed.contains('\0') {
        return Err(format!("{path:?} is not a file path"));
    }
    let candidate = Path::new(trimmed);
    let mut clean = PathBuf::new();
    for component in candidate.components() {
        match component {
            Component::Normal(part) if part == ".git" => {
                return Err(format!(
                    "{path:?} is inside .git; versions cannot write there"
                ));
            }
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!(
                    "{path:?} climbs out with `..`; paths stay inside the work tree"
                ));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "{path:?} is absolute; give a path relative to the project"
                ));
            }
        }
    }
    if clean.as_os_str().is_empty() {
        return Err(format!("{path:?} names no file"));
    }
    Ok(clean)
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    git_raw(dir, args).map(|out| out.trim().to_string())
}

/// Runs git in `dir` with the repository's own hooks and fsmonitor off (whatever a version
/// or a hook left there never runs as moot), returning stdout as printed, untrimmed.
fn git_raw(dir: &Path, args: &[&str]) -> Result<String, String> {
    let output = Command::new("git")
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
        ])
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "moot")
        .env("GIT_AUTHOR_EMAIL", "moot@localhost")
        .env("GIT_COMMITTER_NAME", "moot")
        .env("GIT_COMMITTER_EMAIL", "moot@localhost")
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// Directories a copy leaves out: build output and dependencies, never the code.
const NOT_COPIED: &[&str] = &[".git", "target", "node_modules", ".venv", "__pycache__"];

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if NOT_COPIED.iter().any(|skip| name == *skip) {
            continue;
        }
        let kind = entry.file_type()?;
        let target = to.join(&name);
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
        // Symlinks are not followed or copied: they could point anywhere.
    }
    Ok(())
}

/// Whether `dir` is inside a git work tree (else a debate works in a copy).
pub fn in_git(dir: &Path) -> bool {
    git(dir, &["rev-parse", "--show-toplevel"]).is_ok()
}

impl WorkTree {
    /// A directory taken as a tree (no git), for writing checked paths into it: the user's
    /// own tree when a version is applied outside git.
    pub fn copy_at(root: &Path) -> WorkTree {
        WorkTree {
            root: root.to_path_buf(),
            kind: Kind::Copy,
            origin: root.to_path_buf(),
            branch: None,
            written: Default::default(),
        }
    }

    /// An empty tree that touches no repository: where an audit's re-run writes the versions
    /// the journal holds (commits and hook results come from the journal, not from here).
    pub fn scratch(parent: &Path, debate_id: &str) -> Result<WorkTree, String> {
        let root = parent.join(format!("moot-rehearsal-{debate_id}-{}", std::process::id()));
        std::fs::create_dir_all(&root)
            .map_err(|e| format!("cannot make {}: {e}", root.display()))?;
        Ok(WorkTree {
            origin: root.clone(),
            root,
            kind: Kind::Copy,
            branch: None,
            written: Default::default(),
        })
    }

    /// Makes the tree for `debate_id` from `origin` under `parent` (a temporary directory):
    /// a git worktree on `moot/<debate_id>` at HEAD, or a copy when `origin` is not in git.
    pub fn create(origin: &Path, parent: &Path, debate_id: &str) -> Result<WorkTree, String> {
        let root = parent.join(format!("moot-{debate_id}"));
        match git(origin, &["rev-parse", "--show-toplevel"]) {
            Ok(top) => {
                let branch = format!("moot/{debate_id}");
                let target = root.to_string_lossy().to_string();
                // The branch survives a rebuilt tree (a resume after the tree was removed).
                let exists = git(origin, &["rev-parse", "--verify", "--quiet", &branch]).is_ok();
                // A tree deleted behind git's back (a cleaned temporary directory) is still
                // registered; forget it, or git refuses to check the branch out again.
                let _ = git(Path::new(&top), &["worktree", "prune"]);
                let mut args = vec!["worktree", "add"];
                if !exists {
                    args.extend(["-b", branch.as_str()]);
                }
                args.push(&target);
                if exists {
                    args.push(branch.as_str());
                } else {
                    args.push("HEAD");
                }
                git(Path::new(&top), &args)?;
                Ok(WorkTree {
                    root,
                    kind: Kind::Git,
                    origin: PathBuf::from(top),
                    branch: Some(branch),
                    written: Default::default(),
                })
            }
            Err(_) => {
                copy_tree(origin, &root).map_err(|e| {
                    format!(
                        "cannot copy {} to {}: {e}",
                        origin.display(),
                        root.display()
                    )
                })?;
                Ok(WorkTree {
                    root,
                    kind: Kind::Copy,
                    origin: origin.to_path_buf(),
                    branch: None,
                    written: Default::default(),
                })
            }
        }
    }

    /// The tree of a debate being resumed: the one on disk when it is still there, else made
    /// again (a git worktree from its branch, which holds every committed version).
    pub fn reopen(origin: &Path, parent: &Path, debate_id: &str) -> Result<WorkTree, String> {
        let root = parent.join(format!("moot-{debate_id}"));
        if !root.is_dir() {
            return WorkTree::create(origin, parent, debate_id);
        }
        Ok(match git(origin, &["rev-parse", "--show-toplevel"]) {
            Ok(top) => WorkTree {
                root,
                kind: Kind::Git,
                origin: PathBuf::from(top),
                branch: Some(format!("moot/{debate_id}")),
                written: Default::default(),
            },
            Err(_) => WorkTree {
                root,
                kind: Kind::Copy,
                origin: origin.to_path_buf(),
                branch: None,
                written: Default::default(),
            },
        })
    }

    /// Where `path` (from model output) lands, once checked: inside the tree, through no
    /// symlink.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        let relative = safe_path(path)?;
        let mut walked = self.root.clone();
        for component in relative.components() {
            walked.push(component);
            if walked
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
            {
                return Err(format!(
                    "{path:?} passes through a symlink; versions write only real files in the work tree"
                ));
            }
        }
        Ok(walked)
    }

    /// Writes one file of a version, opened beneath the tree with no symlink anywhere on its
    /// way (`beneath`), whatever a hook left in the tree since the path was checked.
    pub fn write(&self, path: &str, contents: &str) -> Result<(), String> {
        let relative = safe_path(path)?;
        let through_link = |e: std::io::Error| {
            if e.raw_os_error() == Some(libc::ELOOP) || e.raw_os_error() == Some(libc::EXDEV) {
                format!(
                    "{path:?} passes through a symlink; versions write only real files in the work tree"
                )
            } else {
                format!("cannot write {path:?}: {e}")
            }
        };
        let tree = crate::beneath::Beneath::open(&self.root)
            .map_err(|e| format!("cannot open the work tree {}: {e}", self.root.display()))?;
        if let Some(parent) = relative.parent().filter(|p| !p.as_os_str().is_empty()) {
            tree.create_dirs(parent).map_err(through_link)?;
        }
        tree.write(&relative, contents.as_bytes())
            .map_err(through_link)?;
        if let Ok(mut written) = self.written.lock() {
            written.insert(relative.to_string_lossy().into_owned());
        }
        Ok(())
    }

    /// Commits what the model wrote — version `number`'s files (`paths`, checked as `write`
    /// checks them) and every file written through `write` since the last commit — and
    /// nothing else: what a hook created stays out of every version. The commit's id, or
    /// None outside git (or when nothing changed).
    pub fn commit(
        &self,
        number: u32,
        message: &str,
        paths: &[&str],
    ) -> Result<Option<String>, String> {
        if self.kind != Kind::Git {
            return Ok(None);
        }
        let mut staged = self
            .written
            .lock()
            .map(|mut written| std::mem::take(&mut *written))
            .unwrap_or_default();
        // A path `write` refused (noted where it was refused) was never written: not staged.
        for path in paths {
            if self.resolve(path).is_ok()
                && let Ok(clean) = safe_path(path)
            {
                staged.insert(clean.to_string_lossy().into_owned());
            }
        }
        // Files there are added; a path written and then taken away again (a check's layout
        // undone) leaves the index, if git had it at all.
        let (present, gone): (Vec<String>, Vec<String>) = staged
            .into_iter()
            .partition(|path| self.root.join(path).symlink_metadata().is_ok());
        for (command, paths) in [
            (&["add", "--"][..], present),
            (
                &["rm", "-q", "--cached", "--ignore-unmatch", "--"][..],
                gone,
            ),
        ] {
            if !paths.is_empty() {
                let args: Vec<&str> = command
                    .iter()
                    .copied()
                    .chain(paths.iter().map(String::as_str))
                    .collect();
                git(&self.root, &args)?;
            }
        }
        let subject = format!("moot version {number}:");
        if git(&self.root, &["diff", "--cached", "--quiet"]).is_ok() {
            // Committed already, by a run killed before it could journal the commit.
            let head = git(&self.root, &["log", "-1", "--format=%H %s"]).unwrap_or_default();
            return Ok(head
                .split_once(' ')
                .filter(|(_, s)| s.starts_with(&subject))
                .map(|(sha, _)| sha.to_string()));
        }
        let message = format!("{subject} {message}");
        git(&self.root, &["commit", "--no-verify", "-q", "-m", &message])?;
        git(&self.root, &["rev-parse", "HEAD"]).map(Some)
    }

    /// The diff between two commits of the debate (versions), as `git diff` prints it.
    pub fn diff(origin: &Path, from: &str, to: &str) -> Result<String, String> {
        git(origin, &["diff", from, to])
    }

    /// Removes the tree (the branch and its commits stay).
    pub fn remove(self) -> Result<(), String> {
        match self.kind {
            Kind::Git => git(
                &self.origin,
                &[
                    "worktree",
                    "remove",
                    "--force",
                    &self.root.to_string_lossy(),
                ],
            )
            .map(|_| ()),
            Kind::Copy => std::fs::remove_dir_all(&self.root)
                .map_err(|e| format!("cannot remove {}: {e}", self.root.display())),
        }
    }
}

/// Where `branch` (a debate's) left the user's current branch: what its versions are diffed
/// and applied against.
pub fn branch_base(origin: &Path, branch: &str) -> Result<String, String> {
    git(origin, &["merge-base", "HEAD", branch])
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

/// Applies the change from `base` to `version` (commits of the debate's branch) to the user's
/// tree at `origin` as a patch: refused on a dirty tree unless `force`, and on any conflict
/// (checked first, so a refused patch changes nothing). Returns the files it changed.
pub fn apply(
    origin: &Path,
    base: &str,
    version: &str,
    force: bool,
) -> Result<Vec<String>, ApplyError> {
    // Untracked files are not changes a patch could lose (a new decision record, say); a
    // patch that would create one is a conflict `git apply --check` reports.
    // Untrimmed: a porcelain line is two status columns, a space and the path (" M calc.sh").
    let dirty: Vec<String> = git_raw(origin, &["status", "--porcelain", "--untracked-files=no"])
        .map_err(ApplyError::Git)?
        .lines()
        .map(|l| l.get(3..).unwrap_or(l).to_string())
        .collect();
    if !dirty.is_empty() && !force {
        return Err(ApplyError::Dirty(dirty));
    }
    let patch = git(origin, &["diff", "--binary", base, version]).map_err(ApplyError::Git)?;
    if patch.trim().is_empty() {
        return Ok(Vec::new());
    }
    let patch_file = tempfile::NamedTempFile::new().map_err(|e| ApplyError::Git(e.to_string()))?;
    std::fs::write(patch_file.path(), format!("{patch}\n"))
        .map_err(|e| ApplyError::Git(e.to_string()))?;
    let path = patch_file.path().to_string_lossy().to_string();
    git(origin, &["apply", "--check", &path]).map_err(ApplyError::Conflict)?;
    git(origin, &["apply", &path]).map_err(ApplyError::Conflict)?;
    let files = git(origin, &["diff", "--name-only", base, version]).map_err(ApplyError::Git)?;
    Ok(files.lines().map(str::to_string).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "-b", "main"]).unwrap();
        std::fs::write(dir.path().join("lib.rs"), "fn old() {}\n").unwrap();
        git(dir.path(), &["add", "-A"]).unwrap();
        git(dir.path(), &["commit", "-q", "-m", "start"]).unwrap();
        dir
    }

    #[test]
    fn paths_from_a_model_stay_inside() {
        assert_eq!(
            safe_path("src/./retry.rs").unwrap(),
            PathBuf::from("src/retry.rs")
        );
        for bad in [
            "../x.rs",
            "src/../../x",
            "/etc/passwd",
            ".git/config",
            "",
            "a\0b",
            ".",
        ] {
            assert!(safe_path(bad).is_err(), "{bad:?}");
        }
        assert!(safe_path("../x").unwrap_err().contains("`..`"));
    }

    #[test]
    fn a_git_worktree_on_its_branch_takes_versions_and_leaves_the_user_tree_alone() {
        let origin = repo();
        let parent = tempfile::tempdir().unwrap();
        let tree = WorkTree::create(origin.path(), parent.path(), "DEB-test0001").unwrap();
        assert_eq!(tree.kind, Kind::Git);
        assert_eq!(tree.branch.as_deref(), Some("moot/DEB-test0001"));
        tree.write("lib.rs", "fn new() {}\n").unwrap();
        tree.write("src/added.rs", "// v1\n").unwrap();
        // What a hook left in the tree (a file, a symlink out) is in no version.
        std::fs::write(tree.root.join("hooked.txt"), "from a hook\n").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", tree.root.join("host")).unwrap();
        let commit = tree
            .commit(1, "first draft", &["lib.rs", "src/added.rs"])
            .unwrap()
            .unwrap();
        assert_eq!(commit.len(), 40);
        let committed = git(
            origin.path(),
            &["show", "--name-only", "--format=", commit.as_str()],
        )
        .unwrap();
        assert_eq!(committed, "lib.rs\nsrc/added.rs");
        std::fs::remove_file(tree.root.join("hooked.txt")).unwrap();
        std::fs::remove_file(tree.root.join("host")).unwrap();
        assert_eq!(tree.commit(2, "nothing new", &["lib.rs"]).unwrap(), None);
        // The user's tree is untouched; the branch holds the version.
        assert_eq!(
            std::fs::read_to_string(origin.path().join("lib.rs")).unwrap(),
            "fn old() {}\n"
        );
        let log = git(origin.path(), &["log", "--format=%s", "moot/DEB-test0001"]).unwrap();
        assert!(log.starts_with("moot version 1: first draft"), "{log}");
        // A symlink inside the tree pointing out is refused.
        std::os::unix::fs::symlink("/tmp", tree.root.join("out")).unwrap();
        assert!(
            tree.write("out/evil.rs", "x")
                .unwrap_err()
                .contains("symlink")
        );
        assert!(tree.write("../evil.rs", "x").is_err());
        let root = tree.root.clone();
        tree.remove().unwrap();
        assert!(!root.exists());
        // Rebuilt from the branch, as a resume after the tree was removed would; reopened as
        // it is while it stands.
        let again = WorkTree::reopen(origin.path(), parent.path(), "DEB-test0001").unwrap();
        assert_eq!(
            std::fs::read_to_string(again.root.join("src/added.rs")).unwrap(),
            "// v1\n"
        );
        again.write("src/added.rs", "// v2\n").unwrap();
        let same = WorkTree::reopen(origin.path(), parent.path(), "DEB-test0001").unwrap();
        assert_eq!(same.root, again.root);
        assert_eq!(
            std::fs::read_to_string(same.root.join("src/added.rs")).unwrap(),
            "// v2\n"
        );
        assert_eq!(same.branch.as_deref(), Some("moot/DEB-test0001"));
        again.remove().unwrap();
    }

    #[test]
    fn a_version_applies_to_a_clean_tree_and_is_refused_on_a_dirty_one_or_a_conflict() {
        let origin = repo();
        let base = git(origin.path(), &["rev-parse", "HEAD"]).unwrap();
        let parent = tempfile::tempdir().unwrap();
        let tree = WorkTree::create(origin.path(), parent.path(), "DEB-apply001").unwrap();
        tree.write("lib.rs", "fn new() {}\n").unwrap();
        let v1 = tree.commit(1, "v1", &["lib.rs"]).unwrap().unwrap();
        let diff = WorkTree::diff(origin.path(), &base, &v1).unwrap();
        assert!(
            diff.contains("-fn old() {}") && diff.contains("+fn new() {}"),
            "{diff}"
        );
        // Untracked files do not count; a staged or changed tracked file does: refused,
        // nothing changed; --force applies over the unrelated change.
        std::fs::write(origin.path().join("untracked.txt"), "new\n").unwrap();
        std::fs::write(origin.path().join("notes.txt"), "mine\n").unwrap();
        git(origin.path(), &["add", "notes.txt"]).unwrap();
        let refused = apply(origin.path(), &base, &v1, false).unwrap_err();
        assert!(
            matches!(&refused, ApplyError::Dirty(files) if files == &vec!["notes.txt".to_string()])
        );
        assert!(refused.to_string().contains("--force"));
        assert_eq!(
            std::fs::read_to_string(origin.path().join("lib.rs")).unwrap(),
            "fn old() {}\n"
        );
        assert_eq!(
            apply(origin.path(), &base, &v1, true).unwrap(),
            vec!["lib.rs".to_string()]
        );
        assert_eq!(
            std::fs::read_to_string(origin.path().join("lib.rs")).unwrap(),
            "fn new() {}\n"
        );
        // A conflict: the user's lib.rs moved on; the patch is refused whole.
        git(origin.path(), &["checkout", "-q", "--", "lib.rs"]).unwrap();
        std::fs::write(origin.path().join("lib.rs"), "fn theirs() {}\n").unwrap();
        let conflict = apply(origin.path(), &base, &v1, true).unwrap_err();
        assert!(matches!(conflict, ApplyError::Conflict(_)), "{conflict}");
        assert_eq!(
            std::fs::read_to_string(origin.path().join("lib.rs")).unwrap(),
            "fn theirs() {}\n"
        );
        tree.remove().unwrap();
    }

    /// Seed review 004 #4: an unstaged edit (" M README.md") is named whole.
    #[test]
    fn a_dirty_tree_names_its_files_whole() {
        let origin = repo();
        std::fs::write(origin.path().join("README.md"), "# r\n").unwrap();
        git(origin.path(), &["add", "README.md"]).unwrap();
        git(origin.path(), &["commit", "-q", "-m", "readme"]).unwrap();
        let head = git(origin.path(), &["rev-parse", "HEAD"]).unwrap();
        std::fs::write(origin.path().join("README.md"), "# edited\n").unwrap();
        let refused = apply(origin.path(), &head, &head, false).unwrap_err();
        assert_eq!(refused, ApplyError::Dirty(vec!["README.md".to_string()]));
        assert!(refused.to_string().contains("(README.md)"), "{refused}");
    }

    #[test]
    fn outside_git_the_tree_is_a_copy_without_build_output() {
        let origin = tempfile::tempdir().unwrap();
        std::fs::write(origin.path().join("slug.py"), "def slugify(s): return s\n").unwrap();
        std::fs::create_dir(origin.path().join("node_modules")).unwrap();
        std::fs::write(origin.path().join("node_modules/huge.js"), "x").unwrap();
        let parent = tempfile::tempdir().unwrap();
        let tree = WorkTree::create(origin.path(), parent.path(), "DEB-copy0001").unwrap();
        assert_eq!(tree.kind, Kind::Copy);
        assert!(tree.root.join("slug.py").is_file());
        assert!(!tree.root.join("node_modules").exists());
        tree.write("slug.py", "def slugify(s): return s.lower()\n")
            .unwrap();
        assert_eq!(tree.commit(1, "v1", &["lib.rs"]).unwrap(), None);
        assert_eq!(
            std::fs::read_to_string(origin.path().join("slug.py")).unwrap(),
            "def slugify(s): return s\n"
        );
        tree.remove().unwrap();
    }
}
