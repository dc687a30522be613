//! A file's history and blame from the user's repository, as context a code debate's Generator
//! asks for: its recent commits, and which commit last touched each run of lines. Read-only,
//! bounded, and only for files the debate was given (the caller checks that).

use super::git::{self, GitError, Repo};
use std::fmt::Write as _;
use std::path::Path;

/// The most commits of a file's log, and of blame runs, given.
const LOG_COMMITS: usize = 8;
const BLAME_RUNS: usize = 40;

/// `path`'s recent commits and its blame, in a few lines each.
pub fn file_history(repo: &Path, path: &str) -> Result<String, GitError> {
    let log = git::run(
        Repo::In(repo),
        &[
            "log",
            "--follow",
            &format!("-n{LOG_COMMITS}"),
            "--date=short",
            "--format=%h %ad %an: %s",
            "--",
            path,
        ],
    )?;
    let mut out = format!("Recent commits of {path} (newest first):\n");
    if log.trim().is_empty() {
        out.push_str("(none: the file is not committed)\n");
        return Ok(out);
    }
    for line in log.lines() {
        let _ = writeln!(out, "- {line}");
    }
    let porcelain = git::run_raw(Repo::In(repo), &["blame", "--porcelain", "--", path])?;
    out.push_str("Blame (lines: commit, date, author: subject):\n");
    let runs = blame_runs(&porcelain);
    for run in runs.iter().take(BLAME_RUNS) {
        let _ = writeln!(out, "- {run}");
    }
    if runs.len() > BLAME_RUNS {
        let _ = writeln!(out, "- … {} more runs", runs.len() - BLAME_RUNS);
    }
    Ok(out)
}

/// Runs of consecutive lines last touched by one commit, from `git blame --porcelain`:
/// "1–12 a1b2c3d 2025-03-01 Ada: Add the retry loop".
fn blame_runs(porcelain: &str) -> Vec<String> {
    #[derive(Default, Clone)]
    struct Commit {
        author: String,
        time: i64,
        summary: String,
    }
    let mut commits: std::collections::HashMap<String, Commit> = Default::default();
    let mut lines: Vec<(usize, String)> = Vec::new();
    let mut current: Option<(String, usize)> = None;
    for line in porcelain.lines() {
        if line.starts_with('\t') {
            if let Some((hash, number)) = current.take() {
                lines.push((number, hash));
            }
            continue;
        }
        let mut words = line.split(' ');
        let first = words.next().unwrap_or("");
        if first.len() == 40 && first.chars().all(|c| c.is_ascii_hexdigit()) {
            let number = words.nth(1).and_then(|n| n.parse().ok()).unwrap_or(0);
            current = Some((first.to_string(), number));
            commits.entry(first.to_string()).or_default();
            continue;
        }
        let Some((hash, _)) = &current else { continue };
        let entry = commits.entry(hash.clone()).or_default();
        if let Some(author) = line.strip_prefix("author ") {
            entry.author = author.to_string();
        } else if let Some(time) = line.strip_prefix("author-time ") {
            entry.time = time.parse().unwrap_or(0);
        } else if let Some(summary) = line.strip_prefix("summary ") {
            entry.summary = summary.to_string();
        }
    }
    lines.sort();
    let mut runs: Vec<(usize, usize, String)> = Vec::new();
    for (number, hash) in lines {
        match runs.last_mut() {
            Some((_, end, last)) if *last == hash && *end + 1 == number => *end = number,
            _ => runs.push((number, number, hash)),
        }
    }
    runs.into_iter()
        .map(|(start, end, hash)| {
            let commit = commits.get(&hash).cloned().unwrap_or_default();
            let date = time::OffsetDateTime::from_unix_timestamp(commit.time)
                .ok()
                .and_then(|t| {
                    t.format(time::macros::format_description!("[year]-[month]-[day]"))
                        .ok()
                })
                .unwrap_or_default();
            let lines = if start == end {
                format!("{start}")
            } else {
                format!("{start}–{end}")
            };
            format!(
                "{lines} {} {date} {}: {}",
                &hash[..7.min(hash.len())],
                commit.author,
                commit.summary
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_files_history_names_its_commits_and_which_lines_each_last_touched() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let status = std::process::Command::new("git")
                .current_dir(dir.path())
                .args([
                    "-c",
                    "user.name=Ada",
                    "-c",
                    "user.email=ada@example.invalid",
                ])
                .args(args)
                .output()
                .unwrap();
            assert!(status.status.success(), "{args:?}: {status:?}");
        };
        git(&["init", "-q"]);
        std::fs::write(dir.path().join("retry.sh"), "a\nb\nc\n").unwrap();
        git(&["add", "retry.sh"]);
        git(&["commit", "-q", "-m", "Add the retry loop"]);
        std::fs::write(dir.path().join("retry.sh"), "a\nB\nc\nd\n").unwrap();
        git(&["commit", "-q", "-am", "Back off between tries"]);
        let history = file_history(dir.path(), "retry.sh").unwrap();
        assert!(history.contains("Ada: Back off between tries"), "{history}");
        assert!(history.contains("Ada: Add the retry loop"), "{history}");
        let blame: Vec<&str> = history
            .lines()
            .skip_while(|l| !l.starts_with("Blame"))
            .skip(1)
            .collect();
        assert_eq!(blame.len(), 4, "{history}");
        assert!(blame[0].starts_with("- 1 ") && blame[0].ends_with("Add the retry loop"));
        assert!(blame[1].starts_with("- 2 ") && blame[1].ends_with("Back off between tries"));
        assert!(blame[3].starts_with("- 4 ") && blame[3].ends_with("Back off between tries"));
        let untracked = file_history(dir.path(), "nope.sh").unwrap();
        assert!(untracked.contains("not committed"), "{untracked}");
    }
}
