//! Runs git for moot: in the user's repository or in moot's own git dir for a debate's
//! versions, always with hooks and fsmonitor off (whatever a version or a hook left behind
//! never runs as moot) and with moot as the author.

use std::path::Path;
use std::process::Command;

/// Which repository a git command runs in.
#[derive(Debug, Clone, Copy)]
pub enum Repo<'a> {
    /// The repository that holds this directory (`git -C dir`): the user's.
    In(&'a Path),
    /// A git dir of moot's own, with the work tree it checks out to (if any) given
    /// explicitly, so nothing inside a work tree decides which repository git uses.
    Private {
        git_dir: &'a Path,
        work_tree: Option<&'a Path>,
    },
}

/// Why git gave moot nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitError {
    /// git could not be started at all.
    #[error("cannot run git: {0}")]
    Spawn(String),
    /// git ran and refused: the command and what it said.
    #[error("git {command} failed: {stderr}")]
    Failed { command: String, stderr: String },
    /// The debate's versions are not in git (a debate made outside a repository).
    #[error("the versions are in the journal, not in git")]
    NotInGit,
}

impl GitError {
    /// Whether git said `needle` (a message of its own, "couldn't find remote ref").
    pub fn said(&self, needle: &str) -> bool {
        matches!(self, GitError::Failed { stderr, .. } if stderr.contains(needle))
    }
}

/// Runs git in `repo`, returning stdout trimmed.
pub fn run(repo: Repo<'_>, args: &[&str]) -> Result<String, GitError> {
    run_raw(repo, args).map(|out| out.trim().to_string())
}

/// Runs git in `repo`, returning stdout as printed, untrimmed (porcelain columns matter).
pub fn run_raw(repo: Repo<'_>, args: &[&str]) -> Result<String, GitError> {
    let mut command = Command::new("git");
    command.args([
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
    ]);
    match repo {
        Repo::In(dir) => {
            command.arg("-C").arg(dir);
        }
        Repo::Private { git_dir, work_tree } => {
            command.arg("--git-dir").arg(git_dir);
            if let Some(tree) = work_tree {
                command.arg("--work-tree").arg(tree).arg("-C").arg(tree);
            }
        }
    }
    let output = command
        .args(args)
        .env("GIT_AUTHOR_NAME", "moot")
        .env("GIT_AUTHOR_EMAIL", "moot@localhost")
        .env("GIT_COMMITTER_NAME", "moot")
        .env("GIT_COMMITTER_EMAIL", "moot@localhost")
        // Variables a caller's shell set for its own repository must not redirect moot's.
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .map_err(|e| GitError::Spawn(e.to_string()))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(GitError::Failed {
            command: args.join(" "),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        })
    }
}

/// Whether `repo` holds `commit` (a full or abbreviated id) as a commit.
pub fn holds(repo: Repo<'_>, commit: &str) -> bool {
    run(repo, &["cat-file", "-e", &format!("{commit}^{{commit}}")]).is_ok()
}
