//! Where a code debate's committed versions are read after it ran: moot's own git dir under
//! the data dir (`Store::versions_git_dir`, beside the journal), a branch `moot/<id>` in the user's
//! repository (debates run before moot kept its own), or, when neither holds them, the files
//! the journal recorded for each version.

use super::git::{self, GitError, Repo};
use super::versions::Version;
use std::path::{Path, PathBuf};

/// The ref in moot's git dir that names the user's commit a debate started from.
pub const BASE_REF: &str = "refs/moot/base";

/// Where a debate's versions are found.
#[derive(Debug, Clone, PartialEq)]
pub enum History {
    /// Commits in moot's own git dir, based at `BASE_REF`.
    Private { git_dir: PathBuf },
    /// Branch `moot/<id>` in the user's repository at `origin`.
    Branch { origin: PathBuf, branch: String },
    /// No git holds them (the debate ran outside git, or its git dir or branch is gone): the
    /// journal's files are diffed and applied instead.
    Journal,
}

impl History {
    /// Finds where debate `id`'s versions are: the first git that holds its base and the
    /// commit of every version, else the journal.
    pub fn locate(git_dir: &Path, origin: &Path, id: &str, versions: &[Version]) -> History {
        let commits: Vec<&str> = versions
            .iter()
            .filter_map(|v| v.commit.as_deref())
            .collect();
        let private = History::Private {
            git_dir: git_dir.to_path_buf(),
        };
        let branch = History::Branch {
            origin: origin.to_path_buf(),
            branch: format!("moot/{id}"),
        };
        [private, branch]
            .into_iter()
            .find(|history| {
                history.base().is_ok()
                    && history
                        .repo()
                        .is_some_and(|repo| commits.iter().all(|c| git::holds(repo, c)))
            })
            .unwrap_or(History::Journal)
    }

    fn repo(&self) -> Option<Repo<'_>> {
        match self {
            History::Private { git_dir } => Some(Repo::Private {
                git_dir,
                work_tree: None,
            }),
            History::Branch { origin, .. } => Some(Repo::In(origin)),
            History::Journal => None,
        }
    }

    fn git(&self, args: &[&str]) -> Result<String, GitError> {
        let repo = self.repo().ok_or(GitError::NotInGit)?;
        git::run(repo, args)
    }

    /// The user's commit the versions are diffed and applied against: the one the debate
    /// started from (for a branch, where it left the user's current branch).
    pub fn base(&self) -> Result<String, GitError> {
        match self {
            History::Private { .. } => self.git(&["rev-parse", "--verify", "--quiet", BASE_REF]),
            History::Branch { branch, .. } => self.git(&["merge-base", "HEAD", branch]),
            History::Journal => Err(GitError::NotInGit),
        }
    }

    /// The diff between two commits, as `git diff` prints it.
    pub fn diff(&self, from: &str, to: &str) -> Result<String, GitError> {
        self.git(&["diff", from, to])
    }

    /// The change from `from` to `to` as a patch `git apply` takes (binary files included),
    /// and the files it changes.
    pub fn patch(&self, from: &str, to: &str) -> Result<(String, Vec<String>), GitError> {
        let patch = git::run_raw(
            self.repo().ok_or(GitError::NotInGit)?,
            &["diff", "--binary", from, to],
        )?;
        let files = self.git(&["diff", "--name-only", from, to])?;
        Ok((patch, files.lines().map(str::to_string).collect()))
    }

    /// Where the versions are, for a person: "moot's git dir …", "branch moot/… in …".
    pub fn describe(&self) -> String {
        match self {
            History::Private { git_dir } => format!("moot's git dir {}", git_dir.display()),
            History::Branch { origin, branch } => {
                format!("branch {branch} in {}", origin.display())
            }
            History::Journal => "the journal".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        git::run(Repo::In(dir), args).unwrap()
    }

    fn version(commit: Option<&str>) -> Version {
        Version {
            number: 1,
            language: "rust".into(),
            files: vec![("lib.rs".into(), "fn new() {}\n".into())],
            commit: commit.map(str::to_string),
            quality: None,
            passed: None,
            failed: None,
            hooks_ok: None,
            summary: String::new(),
            phase: String::new(),
        }
    }

    /// A debate's versions are read from moot's git dir; a debate from before it kept one,
    /// from its branch in the user's repository; with neither holding every commit, from the
    /// journal.
    #[test]
    fn versions_are_found_in_moots_git_dir_else_a_legacy_branch_else_the_journal() {
        let origin = tempfile::tempdir().unwrap();
        git(origin.path(), &["init", "-q", "-b", "main"]);
        std::fs::write(origin.path().join("lib.rs"), "fn old() {}\n").unwrap();
        git(origin.path(), &["add", "-A"]);
        git(origin.path(), &["commit", "-q", "-m", "start"]);
        let parent = tempfile::tempdir().unwrap();
        let git_dir = parent.path().join("DEB-where001.git");
        let tree = crate::code::worktree::WorkTree::create(crate::code::worktree::Place {
            origin: origin.path(),
            parent: parent.path(),
            git_dir: &git_dir,
            debate_id: "DEB-where001",
        })
        .unwrap();
        tree.write("lib.rs", "fn new() {}\n").unwrap();
        let private = tree.commit(1, "v1", &["lib.rs"]).unwrap().unwrap();
        let found = History::locate(
            &git_dir,
            origin.path(),
            "DEB-where001",
            &[version(Some(&private))],
        );
        assert_eq!(
            found,
            History::Private {
                git_dir: git_dir.clone()
            }
        );
        assert!(
            found
                .diff(&found.base().unwrap(), &private)
                .unwrap()
                .contains("+fn new() {}")
        );

        // A legacy debate: its branch in the user's repository, no git dir of moot's.
        git(
            origin.path(),
            &["checkout", "-q", "-b", "moot/DEB-legacy01"],
        );
        std::fs::write(origin.path().join("lib.rs"), "fn legacy() {}\n").unwrap();
        git(
            origin.path(),
            &["commit", "-q", "-am", "moot version 1: legacy"],
        );
        let legacy = git(origin.path(), &["rev-parse", "HEAD"]);
        git(origin.path(), &["checkout", "-q", "main"]);
        let missing = parent.path().join("DEB-legacy01.git");
        let found = History::locate(
            &missing,
            origin.path(),
            "DEB-legacy01",
            &[version(Some(&legacy))],
        );
        assert_eq!(
            found,
            History::Branch {
                origin: origin.path().to_path_buf(),
                branch: "moot/DEB-legacy01".into()
            }
        );
        let (patch, files) = found.patch(&found.base().unwrap(), &legacy).unwrap();
        assert!(patch.contains("+fn legacy() {}"), "{patch}");
        assert_eq!(files, ["lib.rs"]);

        // A commit no git holds (its git dir deleted): the journal.
        std::fs::remove_dir_all(&git_dir).unwrap();
        let found = History::locate(
            &git_dir,
            origin.path(),
            "DEB-where001",
            &[version(Some(&private))],
        );
        assert_eq!(found, History::Journal);
        assert!(found.base().is_err());
    }
}
