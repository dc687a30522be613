//! A code debate's own work tree, where versions are written and committed, so that the
//! user's files are never touched during a debate. In git it is a checkout of moot's own git
//! dir for the debate (`history::private_git_dir`, under the data dir), started from the
//! user's HEAD: the tree holds no `.git`, and nothing in it can reach the user's repository.
//! Outside git it is a temporary copy. Paths come from model output, so each is checked to
//! stay inside the tree: no absolute paths, no `..`, nothing under `.git`, no symlinks.

use super::git::{self, GitError, Repo};
use super::history::BASE_REF;
use std::path::{Component, Path, PathBuf};

/// Why the work tree would not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorktreeError {
    /// A path from model output that moot will not write (outside the tree, through a
    /// symlink, under `.git`): the sentence says why.
    #[error("{0}")]
    Refused(String),
    /// The filesystem would not: what was tried, where, and what it said.
    #[error("{0}")]
    Io(String),
    #[error(transparent)]
    Git(#[from] GitError),
    /// The user's repository has no commit to start a debate from.
    #[error(
        "{top} has no commit yet, so a debate has nothing to start from; commit once, or run the debate outside git"
    )]
    Unborn { top: String },
    /// A copy made outside git has no history to commit to.
    #[error("this work tree has no git dir")]
    NoGitDir,
}

/// A debate's work tree.
#[derive(Debug)]
pub struct WorkTree {
    pub root: PathBuf,
    /// moot's own git dir holding the versions; None for a copy (outside git) or a rehearsal.
    pub git_dir: Option<PathBuf>,
    /// The user's repository (or directory) it came from.
    pub origin: PathBuf,
    /// Paths moot wrote for the model since the last commit: all a commit may stage.
    written: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

/// Why a path from a model was refused.
pub fn safe_path(path: &str) -> Result<PathBuf, WorktreeError> {
    let trimmed = path.trim();
    if trimmed.is_empty() || trimmed.contains('\0') {
        return Err(WorktreeError::Refused(format!(
            "{path:?} is not a file path"
        )));
    }
    let candidate = Path::new(trimmed);
    let mut clean = PathBuf::new();
    for component in candidate.components() {
        match component {
            Component::Normal(part) if part == ".git" => {
                return Err(WorktreeError::Refused(format!(
                    "{path:?} is inside .git; versions cannot write there"
                )));
            }
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(WorktreeError::Refused(format!(
                    "{path:?} climbs out with `..`; paths stay inside the work tree"
                )));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(WorktreeError::Refused(format!(
                    "{path:?} is absolute; give a path relative to the project"
                )));
            }
        }
    }
    if clean.as_os_str().is_empty() {
        return Err(WorktreeError::Refused(format!("{path:?} names no file")));
    }
    Ok(clean)
}

/// Files that configure git for the tree they sit in: a diff, merge or filter driver an
/// attribute names runs a command the person's git config defines, and a submodule points
/// the repository elsewhere. A model's version never writes them, nor does `code apply`.
pub const GIT_CONFIG_FILES: &[&str] = &[".gitattributes", ".gitmodules"];

/// Why a model may not write `path` though it stays inside the tree: it is a git
/// configuration file (`GIT_CONFIG_FILES`), at any depth.
pub fn configures_git(path: &str) -> Option<String> {
    Path::new(path.trim())
        .components()
        .any(|c| matches!(c, Component::Normal(part) if GIT_CONFIG_FILES.iter().any(|g| part == *g)))
        .then(|| {
            format!(
                "{path:?} configures git (its attributes can name drivers that run commands in your repository); a version never writes it"
            )
        })
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
    git::run(Repo::In(dir), &["rev-parse", "--show-toplevel"]).is_ok()
}

/// The branch in moot's git dir that a debate's versions are committed on.
fn branch_of(debate_id: &str) -> String {
    format!("moot/{debate_id}")
}

/// Makes moot's git dir for a debate, unless it is there already: an empty repository that
/// takes the user's HEAD (that commit alone, shallow), names it `BASE_REF` and starts the
/// debate's branch on it. The user's repository is only read.
fn make_private(top: &Path, git_dir: &Path, debate_id: &str) -> Result<(), WorktreeError> {
    let repo = Repo::Private {
        git_dir,
        work_tree: None,
    };
    let branch = branch_of(debate_id);
    if git::run(repo, &["rev-parse", "--verify", "--quiet", &branch]).is_ok() {
        return Ok(());
    }
    if let Some(parent) = git_dir.parent() {
        // `versions/` holds the project's code: its owner's alone, as the journal is.
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|e| WorktreeError::Io(format!("cannot make {}: {e}", parent.display())))?;
    }
    // No template: no sample hooks, nothing but what git needs.
    git::run(repo, &["init", "-q", "--bare", "--template="])?;
    let top = top.to_string_lossy();
    git::run(
        repo,
        &[
            "fetch",
            "-q",
            "--no-tags",
            "--depth=1",
            top.as_ref(),
            "HEAD",
        ],
    )
    .map_err(|e| {
        if e.said("couldn't find remote ref") {
            WorktreeError::Unborn {
                top: top.to_string(),
            }
        } else {
            WorktreeError::Git(e)
        }
    })?;
    git::run(repo, &["update-ref", BASE_REF, "FETCH_HEAD"])?;
    git::run(repo, &["branch", "--force", &branch, BASE_REF])?;
    Ok(())
}

/// Where a debate's tree is made: from the user's project (`origin`), under `parent` (a
/// temporary directory), its versions in the private `git_dir`. Named fields, so the three
/// paths cannot trade places.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    pub origin: &'a Path,
    pub parent: &'a Path,
    pub git_dir: &'a Path,
    pub debate_id: &'a str,
}

impl Place<'_> {
    /// The tree's own directory.
    fn root(&self) -> PathBuf {
        self.parent.join(format!("moot-{}", self.debate_id))
    }
}

impl WorkTree {
    /// A directory taken as a tree (no git), for writing checked paths into it: the user's
    /// own tree when a version is applied outside git.
    pub fn copy_at(root: &Path) -> WorkTree {
        WorkTree {
            root: root.to_path_buf(),
            git_dir: None,
            origin: root.to_path_buf(),
            written: Default::default(),
        }
    }

    /// An empty tree that touches no repository: where an audit's re-run writes the versions
    /// the journal holds (commits and hook results come from the journal, not from here).
    pub fn scratch(parent: &Path, debate_id: &str) -> Result<WorkTree, WorktreeError> {
        let root = parent.join(format!("moot-rehearsal-{debate_id}-{}", std::process::id()));
        std::fs::create_dir_all(&root)
            .map_err(|e| WorktreeError::Io(format!("cannot make {}: {e}", root.display())))?;
        Ok(WorkTree::copy_at(&root))
    }

    /// Makes the tree of `place`: in git, a checkout of the debate's branch in its git dir
    /// (made from the user's HEAD if new); outside git, a copy.
    pub fn create(place: Place<'_>) -> Result<WorkTree, WorktreeError> {
        let Place {
            origin,
            git_dir,
            debate_id,
            ..
        } = place;
        let root = place.root();
        let Ok(top) = git::run(Repo::In(origin), &["rev-parse", "--show-toplevel"]) else {
            copy_tree(origin, &root).map_err(|e| {
                WorktreeError::Io(format!(
                    "cannot copy {} to {}: {e}",
                    origin.display(),
                    root.display()
                ))
            })?;
            return Ok(WorkTree {
                root,
                git_dir: None,
                origin: origin.to_path_buf(),
                written: Default::default(),
            });
        };
        make_private(Path::new(&top), git_dir, debate_id)?;
        std::fs::create_dir_all(&root)
            .map_err(|e| WorktreeError::Io(format!("cannot make {}: {e}", root.display())))?;
        let tree = WorkTree {
            root,
            git_dir: Some(git_dir.to_path_buf()),
            origin: PathBuf::from(top),
            written: Default::default(),
        };
        tree.git(&["checkout", "-q", "--force", &branch_of(debate_id)])?;
        Ok(tree)
    }

    /// The tree of a debate being resumed: the one on disk when it is still there, else made
    /// again (from the debate's branch in its git dir, which holds every committed version).
    pub fn reopen(place: Place<'_>) -> Result<WorkTree, WorktreeError> {
        let (origin, git_dir, root) = (place.origin, place.git_dir, place.root());
        let legacy = root.join(".git");
        if legacy.symlink_metadata().is_ok() {
            // A tree from before moot kept its own git dir: a worktree of the user's
            // repository. It is let go (its branch stays there) and made afresh.
            let _ = git::run(
                Repo::In(origin),
                &["worktree", "remove", "--force", &root.to_string_lossy()],
            );
            if root.exists() {
                std::fs::remove_dir_all(&root).map_err(|e| {
                    WorktreeError::Io(format!("cannot remove {}: {e}", root.display()))
                })?;
            }
        }
        if !root.is_dir() {
            return WorkTree::create(place);
        }
        Ok(
            match git::run(Repo::In(origin), &["rev-parse", "--show-toplevel"]) {
                Ok(top) => {
                    make_private(Path::new(&top), git_dir, place.debate_id)?;
                    WorkTree {
                        root,
                        git_dir: Some(git_dir.to_path_buf()),
                        origin: PathBuf::from(top),
                        written: Default::default(),
                    }
                }
                Err(_) => WorkTree {
                    root,
                    git_dir: None,
                    origin: origin.to_path_buf(),
                    written: Default::default(),
                },
            },
        )
    }

    /// Runs git on the tree and its git dir.
    fn git(&self, args: &[&str]) -> Result<String, WorktreeError> {
        let git_dir = self.git_dir.as_deref().ok_or(WorktreeError::NoGitDir)?;
        Ok(git::run(
            Repo::Private {
                git_dir,
                work_tree: Some(&self.root),
            },
            args,
        )?)
    }

    /// Where `path` (from model output) lands, once checked: inside the tree, through no
    /// symlink.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, WorktreeError> {
        let relative = safe_path(path)?;
        let mut walked = self.root.clone();
        for component in relative.components() {
            walked.push(component);
            if walked
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
            {
                return Err(WorktreeError::Refused(format!(
                    "{path:?} passes through a symlink; versions write only real files in the work tree"
                )));
            }
        }
        Ok(walked)
    }

    /// Writes one file of a version, opened beneath the tree with no symlink anywhere on its
    /// way (`beneath`), whatever a hook left in the tree since the path was checked.
    pub fn write(&self, path: &str, contents: &str) -> Result<(), WorktreeError> {
        let relative = safe_path(path)?;
        let through_link = |e: std::io::Error| {
            if e.raw_os_error() == Some(libc::ELOOP) || e.raw_os_error() == Some(libc::EXDEV) {
                WorktreeError::Refused(format!(
                    "{path:?} passes through a symlink; versions write only real files in the work tree"
                ))
            } else {
                WorktreeError::Io(format!("cannot write {path:?}: {e}"))
            }
        };
        let tree = crate::beneath::Beneath::open(&self.root).map_err(|e| {
            WorktreeError::Io(format!(
                "cannot open the work tree {}: {e}",
                self.root.display()
            ))
        })?;
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

    /// Removes one file of a version (a check's layout undone), beneath the tree with no
    /// symlink anywhere on the way: a link a hook left since is refused, not followed.
    pub fn remove_file(&self, path: &str) -> Result<(), WorktreeError> {
        let relative = safe_path(path)?;
        let tree = crate::beneath::Beneath::open(&self.root).map_err(|e| {
            WorktreeError::Io(format!(
                "cannot open the work tree {}: {e}",
                self.root.display()
            ))
        })?;
        match tree.remove(&relative) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(WorktreeError::Io(format!("cannot remove {path:?}: {e}"))),
        }
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
    ) -> Result<Option<String>, WorktreeError> {
        if self.git_dir.is_none() {
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
        // Files there are added (even where the project's .gitignore would leave them out:
        // the model wrote them); a path written and then taken away again (a check's layout
        // undone) leaves the index, if git had it at all.
        let (present, gone): (Vec<String>, Vec<String>) = staged
            .into_iter()
            .partition(|path| self.root.join(path).symlink_metadata().is_ok());
        for (command, paths) in [
            (&["add", "--force", "--"][..], present),
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
                self.git(&args)?;
            }
        }
        let subject = format!("moot version {number}:");
        if self.git(&["diff", "--cached", "--quiet"]).is_ok() {
            // Committed already, by a run killed before it could journal the commit.
            let head = self
                .git(&["log", "-1", "--format=%H %s"])
                .unwrap_or_default();
            return Ok(head
                .split_once(' ')
                .filter(|(_, s)| s.starts_with(&subject))
                .map(|(sha, _)| sha.to_string()));
        }
        let message = format!("{subject} {message}");
        self.git(&["commit", "--no-verify", "-q", "-m", &message])?;
        self.git(&["rev-parse", "HEAD"]).map(Some)
    }

    /// Removes the tree (the git dir and its commits stay).
    pub fn remove(self) -> Result<(), WorktreeError> {
        std::fs::remove_dir_all(&self.root)
            .map_err(|e| WorktreeError::Io(format!("cannot remove {}: {e}", self.root.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The place of a test's tree: its project, the directory it goes under, its git dir.
    fn at<'a>(
        origin: &'a tempfile::TempDir,
        parent: &'a tempfile::TempDir,
        git_dir: &'a Path,
        debate_id: &'a str,
    ) -> Place<'a> {
        Place {
            origin: origin.path(),
            parent: parent.path(),
            git_dir,
            debate_id,
        }
    }
    use crate::code::apply::{ApplyError, apply_patch};
    use crate::code::history::History;

    fn git(dir: &Path, args: &[&str]) -> Result<String, GitError> {
        git::run(Repo::In(dir), args)
    }

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "-b", "main"]).unwrap();
        std::fs::write(dir.path().join("lib.rs"), "fn old() {}\n").unwrap();
        git(dir.path(), &["add", "-A"]).unwrap();
        git(dir.path(), &["commit", "-q", "-m", "start"]).unwrap();
        dir
    }

    /// Commits `file` holding `text` with `message`; the new head.
    fn commit(dir: &Path, file: &str, text: &str, message: &str) -> String {
        std::fs::write(dir.join(file), text).unwrap();
        git(dir, &["add", file]).unwrap();
        git(dir, &["commit", "-q", "-m", message]).unwrap();
        git(dir, &["rev-parse", "HEAD"]).unwrap()
    }

    /// Everything under a repository's `.git`, path and contents, to show it unchanged.
    fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(at: &Path, into: &mut Vec<(PathBuf, Vec<u8>)>) {
            let mut entries: Vec<_> = std::fs::read_dir(at).unwrap().flatten().collect();
            entries.sort_by_key(std::fs::DirEntry::path);
            for entry in entries {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, into);
                } else {
                    into.push((path.clone(), std::fs::read(&path).unwrap_or_default()));
                }
            }
        }
        let mut files = Vec::new();
        walk(&dir.join(".git"), &mut files);
        files
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
        assert!(safe_path("../x").unwrap_err().to_string().contains("`..`"));
    }

    /// N1: the tree is a checkout of moot's own git dir, so the user's repository gains no
    /// branch, no worktree entry and no file in `.git`, and the tree has no `.git` at all.
    #[test]
    fn versions_are_committed_in_moots_own_git_dir_and_the_user_repository_is_only_read() {
        let origin = repo();
        let head = commit(origin.path(), ".gitignore", "build/\n", "ignore build");
        let before = snapshot(origin.path());
        let parent = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let git_dir = data.path().join("versions/DEB-test0001.git");
        let tree = WorkTree::create(at(&origin, &parent, &git_dir, "DEB-test0001")).unwrap();
        assert_eq!(tree.git_dir.as_deref(), Some(git_dir.as_path()));
        assert!(!tree.root.join(".git").exists());
        assert_eq!(
            std::fs::read_to_string(tree.root.join("lib.rs")).unwrap(),
            "fn old() {}\n"
        );
        tree.write("lib.rs", "fn new() {}\n").unwrap();
        tree.write("src/added.rs", "// v1\n").unwrap();
        // A file the model wrote where the project's .gitignore points is still its version.
        tree.write("build/gen.rs", "// generated by the model\n")
            .unwrap();
        // What a hook left in the tree (a file, a symlink out) is in no version.
        std::fs::write(tree.root.join("hooked.txt"), "from a hook\n").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", tree.root.join("host")).unwrap();
        let commit = tree
            .commit(1, "first draft", &["lib.rs", "src/added.rs"])
            .unwrap()
            .unwrap();
        assert_eq!(commit.len(), 40);
        let private = Repo::Private {
            git_dir: &git_dir,
            work_tree: None,
        };
        let committed = git::run(
            private,
            &["show", "--name-only", "--format=", commit.as_str()],
        )
        .unwrap();
        assert_eq!(committed, "build/gen.rs\nlib.rs\nsrc/added.rs");
        assert_eq!(
            git::run(private, &["rev-parse", BASE_REF]).unwrap(),
            head,
            "the base is the user's HEAD"
        );
        std::fs::remove_file(tree.root.join("hooked.txt")).unwrap();
        std::fs::remove_file(tree.root.join("host")).unwrap();
        assert_eq!(tree.commit(2, "nothing new", &["lib.rs"]).unwrap(), None);
        // The user's tree and repository are as they were: the version is in moot's git dir.
        assert_eq!(
            std::fs::read_to_string(origin.path().join("lib.rs")).unwrap(),
            "fn old() {}\n"
        );
        assert_eq!(snapshot(origin.path()), before);
        assert!(!git::holds(Repo::In(origin.path()), &commit));
        let log = git::run(private, &["log", "--format=%s", "moot/DEB-test0001"]).unwrap();
        assert!(log.starts_with("moot version 1: first draft"), "{log}");
        // A symlink inside the tree pointing out is refused, for a write and a removal alike.
        let bait = tempfile::tempdir().unwrap();
        std::fs::write(bait.path().join("evil.rs"), "kept\n").unwrap();
        std::os::unix::fs::symlink(bait.path(), tree.root.join("bait")).unwrap();
        assert!(tree.remove_file("bait/evil.rs").is_err());
        assert!(bait.path().join("evil.rs").exists());
        tree.remove_file("src/added.rs").unwrap();
        assert!(!tree.root.join("src/added.rs").exists());
        tree.remove_file("src/never-there.rs").unwrap();
        tree.write("src/added.rs", "// v1\n").unwrap();
        std::os::unix::fs::symlink("/tmp", tree.root.join("out")).unwrap();
        assert!(
            tree.write("out/evil.rs", "x")
                .unwrap_err()
                .to_string()
                .contains("symlink")
        );
        assert!(tree.write("../evil.rs", "x").is_err());
        let root = tree.root.clone();
        tree.remove().unwrap();
        assert!(!root.exists());
        // Rebuilt from the git dir, as a resume after the tree was removed would; reopened as
        // it is while it stands.
        let again = WorkTree::reopen(at(&origin, &parent, &git_dir, "DEB-test0001")).unwrap();
        assert_eq!(
            std::fs::read_to_string(again.root.join("src/added.rs")).unwrap(),
            "// v1\n"
        );
        again.write("src/added.rs", "// v2\n").unwrap();
        let same = WorkTree::reopen(at(&origin, &parent, &git_dir, "DEB-test0001")).unwrap();
        assert_eq!(same.root, again.root);
        assert_eq!(
            std::fs::read_to_string(same.root.join("src/added.rs")).unwrap(),
            "// v2\n"
        );
        again.remove().unwrap();
        assert_eq!(snapshot(origin.path()), before);
    }

    /// A tree from before moot kept its own git dir (a worktree of the user's repository) is
    /// let go on a resume and made again from moot's git dir.
    #[test]
    fn a_legacy_worktree_is_let_go_on_a_resume() {
        let origin = repo();
        let parent = tempfile::tempdir().unwrap();
        let root = parent.path().join("moot-DEB-legacy01");
        git(
            origin.path(),
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "moot/DEB-legacy01",
                &root.to_string_lossy(),
                "HEAD",
            ],
        )
        .unwrap();
        let data = tempfile::tempdir().unwrap();
        let git_dir = data.path().join("DEB-legacy01.git");
        let tree = WorkTree::reopen(at(&origin, &parent, &git_dir, "DEB-legacy01")).unwrap();
        assert!(!tree.root.join(".git").exists());
        assert!(tree.root.join("lib.rs").is_file());
        let listed = git(origin.path(), &["worktree", "list"]).unwrap();
        assert_eq!(listed.lines().count(), 1, "{listed}");
    }

    #[test]
    fn an_unborn_repository_is_refused_with_what_to_do() {
        let origin = tempfile::tempdir().unwrap();
        git(origin.path(), &["init", "-q"]).unwrap();
        let parent = tempfile::tempdir().unwrap();
        let git_dir = parent.path().join("v.git");
        let refused = WorkTree::create(at(&origin, &parent, &git_dir, "DEB-unborn01")).unwrap_err();
        assert!(
            refused.to_string().contains("has no commit yet"),
            "{refused}"
        );
    }

    #[test]
    fn a_version_applies_to_a_clean_tree_and_is_refused_on_a_dirty_one_or_a_conflict() {
        let origin = repo();
        let parent = tempfile::tempdir().unwrap();
        let git_dir = parent.path().join("DEB-apply001.git");
        let tree = WorkTree::create(at(&origin, &parent, &git_dir, "DEB-apply001")).unwrap();
        tree.write("lib.rs", "fn new() {}\n").unwrap();
        let v1 = tree.commit(1, "v1", &["lib.rs"]).unwrap().unwrap();
        let history = History::Private {
            git_dir: git_dir.clone(),
        };
        let base = history.base().unwrap();
        let diff = history.diff(&base, &v1).unwrap();
        assert!(
            diff.contains("-fn old() {}") && diff.contains("+fn new() {}"),
            "{diff}"
        );
        // Untracked files do not count; a staged or changed tracked file does: refused,
        // nothing changed; --force applies over the unrelated change.
        std::fs::write(origin.path().join("untracked.txt"), "new\n").unwrap();
        std::fs::write(origin.path().join("notes.txt"), "mine\n").unwrap();
        git(origin.path(), &["add", "notes.txt"]).unwrap();
        let refused = apply_patch(origin.path(), &history, &base, &v1, false).unwrap_err();
        assert!(
            matches!(&refused, ApplyError::Dirty(files) if files == &vec!["notes.txt".to_string()])
        );
        assert!(refused.to_string().contains("--force"));
        assert_eq!(
            std::fs::read_to_string(origin.path().join("lib.rs")).unwrap(),
            "fn old() {}\n"
        );
        assert_eq!(
            apply_patch(origin.path(), &history, &base, &v1, true).unwrap(),
            vec!["lib.rs".to_string()]
        );
        assert_eq!(
            std::fs::read_to_string(origin.path().join("lib.rs")).unwrap(),
            "fn new() {}\n"
        );
        // A conflict: the user's lib.rs moved on; the patch is refused whole.
        git(origin.path(), &["checkout", "-q", "--", "lib.rs"]).unwrap();
        std::fs::write(origin.path().join("lib.rs"), "fn theirs() {}\n").unwrap();
        let conflict = apply_patch(origin.path(), &history, &base, &v1, true).unwrap_err();
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
        let head = commit(origin.path(), "README.md", "# r\n", "readme");
        std::fs::write(origin.path().join("README.md"), "# edited\n").unwrap();
        let history = History::Branch {
            origin: origin.path().to_path_buf(),
            branch: "main".into(),
        };
        let refused = apply_patch(origin.path(), &history, &head, &head, false).unwrap_err();
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
        let git_dir = parent.path().join("unused.git");
        let tree = WorkTree::create(at(&origin, &parent, &git_dir, "DEB-copy0001")).unwrap();
        assert_eq!(tree.git_dir, None);
        assert!(!git_dir.exists());
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
