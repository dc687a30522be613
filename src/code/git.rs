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

/// Runs git in `repo`, returning stdout trimmed.
pub fn run(repo: Repo<'_>, args: &[&str]) -> Result<String, String> {
    run_raw(repo, args).map(|out| out.trim().to_string())
}

/// Runs git in `repo`, returning stdout as printed, untrimmed (porcelain columns matter).
pub fn run_raw(repo: Repo<'_>, args: &[&str]) -> Result<String, String> {
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

/// Whether `repo` holds `commit` (a full or abbreviated id) as a commit.
pub fn holds(repo: Repo<'_>, commit: &str) -> bool {
    run(repo, &["cat-file", "-e", &format!("{commit}^{{commit}}")]).is_ok()
}
