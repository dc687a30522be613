//! `moot code prune [--older-than DAYS] [--dry-run]`: removes what code debates left outside
//! the journal once they are over — moot's git dir of each debate's versions, the temporary
//! work trees and rehearsal copies, and the `moot/DEB-…` branches debates from before moot kept
//! its own git dir made in your repository. Only what this journal owns goes: a leftover in a
//! shared place (the temp dir, a repository) goes only when the journal holds its debate by
//! that exact id and that debate is over for good. The journal keeps every version's files,
//! tests and record, so `moot code versions | diff | apply` still work from it.

use super::{Failure, print};
use crate::code::git::{self, Repo};
use crate::debate::Debate;
use crate::store::{Store, StoreError};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// One thing moot made that can go, and why it may.
#[derive(Debug, Clone, PartialEq)]
struct Leftover {
    kind: Kind,
    /// The directory, or the repository that holds the branch.
    path: PathBuf,
    /// The branch's name, for a branch.
    branch: Option<String>,
    why: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    GitDir,
    WorkTree,
    Branch,
}

/// Why a debate's leftovers stay or may go.
enum Verdict {
    Go(String),
    Stay(String),
}

/// Whether a debate's leftovers may go: only once it is over for good (completed or cancelled;
/// a paused, failed or interrupted debate may still be resumed and needs them), and finished
/// before `cutoff` when one is given.
fn judge(debate: &Debate, cutoff: Option<&str>) -> Verdict {
    if !debate.status.is_finished_for_good() {
        return Verdict::Stay(format!(
            "{} is {}, and may be resumed",
            debate.id, debate.status
        ));
    }
    let finished = debate.finished_at.as_deref().unwrap_or(&debate.updated_at);
    match cutoff {
        // RFC 3339 times in UTC, as moot writes them, compare as text.
        Some(cutoff) if finished > cutoff => {
            Verdict::Stay(format!("{} finished {finished}, too recently", debate.id))
        }
        _ => Verdict::Go(format!("{} {} {finished}", debate.id, debate.status)),
    }
}

/// A debate id as moot makes them (`DEB-` and letters or digits), nothing else.
fn is_debate_id(text: &str) -> bool {
    text.strip_prefix("DEB-").is_some_and(|rest| {
        !rest.is_empty() && rest.len() <= 32 && rest.chars().all(|c| c.is_ascii_alphanumeric())
    })
}

/// Where a leftover lies, which says whether this journal can own it though it no longer
/// holds its debate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Inside this journal's own data dir (`versions/`): nobody else's.
    DataDir,
    /// Shared with every other moot (the temp dir, a repository): this journal's only when it
    /// holds the debate.
    Shared,
}

/// What to do about debate `id`'s leftover: judged by the journal when it holds that very id
/// (never another that merely starts with it); a leftover of a debate it does not hold goes
/// only from its own data dir, and then only once not touched for `older_than`. One in a
/// shared place may belong to another moot (another `MOOT_HOME`, a server, a test), perhaps
/// running now, so it stays.
fn verdict_for(
    store: &Store,
    id: &str,
    place: Place,
    touched: Option<SystemTime>,
    cutoff: Option<&str>,
    older_than: Option<Duration>,
) -> Result<Verdict, StoreError> {
    let held = match store.debate(id) {
        Ok(debate) if debate.id == id => Some(debate),
        Ok(_) | Err(StoreError::NotFound(_)) => None,
        Err(StoreError::Ambiguous { .. }) => None,
        Err(e) => return Err(e),
    };
    if let Some(debate) = held {
        return Ok(judge(&debate, cutoff));
    }
    if place == Place::Shared {
        return Ok(Verdict::Stay(format!(
            "{id} is not in this journal: it may be another moot's; remove it by hand if it is yours"
        )));
    }
    let old = match (older_than, touched) {
        (None, _) => true,
        (Some(age), Some(at)) => at.elapsed().is_ok_and(|e| e >= age),
        (Some(_), None) => false,
    };
    Ok(if old {
        Verdict::Go(format!("{id} is not in the journal"))
    } else {
        Verdict::Stay(format!(
            "{id} is not in the journal, but was touched recently"
        ))
    })
}

/// A real directory (not a link to one), with when it was last changed.
fn real_dir(path: &Path) -> Option<SystemTime> {
    let meta = path.symlink_metadata().ok()?;
    meta.is_dir().then(|| meta.modified().ok()).flatten()
}

/// Every leftover, and what was kept with why.
fn survey(
    store: &Store,
    repos: &[PathBuf],
    temp: &Path,
    cutoff: Option<&str>,
    older_than: Option<Duration>,
) -> Result<(Vec<Leftover>, Vec<String>), Failure> {
    let mut found = Vec::new();
    let mut kept = Vec::new();
    let mut consider = |kind, path: PathBuf, branch: Option<String>, verdict| match verdict {
        Verdict::Go(why) => found.push(Leftover {
            kind,
            path,
            branch,
            why,
        }),
        Verdict::Stay(why) => kept.push(why),
    };
    // moot's git dirs: `<data dir>/versions/DEB-….git`.
    let versions = store
        .versions_git_dir("DEB-x")
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    for entry in std::fs::read_dir(&versions).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(id) = name.strip_suffix(".git").filter(|id| is_debate_id(id)) else {
            continue;
        };
        let Some(touched) = real_dir(&path) else {
            continue;
        };
        let verdict = verdict_for(store, id, Place::DataDir, Some(touched), cutoff, older_than)?;
        consider(Kind::GitDir, path, None, verdict);
    }
    // Work trees and rehearsal copies: `<temp>/moot-DEB-…`, `<temp>/moot-rehearsal-DEB-…-PID`.
    for entry in std::fs::read_dir(temp).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        let id = match name.strip_prefix("moot-rehearsal-") {
            Some(rest) => rest.rsplit_once('-').map(|(id, _)| id.to_string()),
            None => name.strip_prefix("moot-").map(str::to_string),
        };
        let Some(id) = id.filter(|id| is_debate_id(id)) else {
            continue;
        };
        let Some(touched) = real_dir(&path) else {
            continue;
        };
        let verdict = verdict_for(store, &id, Place::Shared, Some(touched), cutoff, older_than)?;
        consider(Kind::WorkTree, path, None, verdict);
    }
    // Branches debates from before moot's own git dir made in the user's repositories.
    for repo in repos {
        let Ok(listed) = git::run(
            Repo::In(repo),
            &[
                "for-each-ref",
                "--format=%(refname:short) %(committerdate:unix)",
                "refs/heads/moot/",
            ],
        ) else {
            continue;
        };
        for line in listed.lines() {
            let Some((branch, when)) = line.split_once(' ') else {
                continue;
            };
            let Some(id) = branch.strip_prefix("moot/").filter(|id| is_debate_id(id)) else {
                continue;
            };
            let touched = when
                .parse::<u64>()
                .ok()
                .map(|s| SystemTime::UNIX_EPOCH + Duration::from_secs(s));
            let verdict = verdict_for(store, id, Place::Shared, touched, cutoff, older_than)?;
            consider(
                Kind::Branch,
                repo.clone(),
                Some(branch.to_string()),
                verdict,
            );
        }
    }
    Ok((found, kept))
}

/// The repositories that may hold old branches: where moot runs, and every code debate's own.
fn repositories(store: &Store, cwd: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let mut repos: Vec<PathBuf> = Vec::new();
    let top = |dir: &Path| git::run(Repo::In(dir), &["rev-parse", "--show-toplevel"]).ok();
    if let Some(top) = top(cwd) {
        repos.push(PathBuf::from(top));
    }
    for summary in store.list(usize::MAX)? {
        if summary.protocol != "code" {
            continue;
        }
        let debate = store.debate(&summary.id)?;
        let Some(origin) = debate.config["protocol_settings"]["origin"].as_str() else {
            continue;
        };
        if let Some(top) = top(Path::new(origin)) {
            let top = PathBuf::from(top);
            if !repos.contains(&top) {
                repos.push(top);
            }
        }
    }
    Ok(repos)
}

fn remove(leftover: &Leftover) -> std::io::Result<()> {
    match (leftover.kind, &leftover.branch) {
        (Kind::Branch, Some(branch)) => {
            git::run(Repo::In(&leftover.path), &["branch", "-D", branch])
                .map(|_| ())
                .map_err(std::io::Error::other)
        }
        _ => {
            // Checked again just before: a link put there since the survey is never followed.
            if real_dir(&leftover.path).is_none() {
                return Err(std::io::Error::other("no longer a directory"));
            }
            std::fs::remove_dir_all(&leftover.path)
        }
    }
}

/// `moot code prune`.
pub fn prune(store: &Store, older_than_days: Option<u32>, dry_run: bool) -> Result<(), Failure> {
    let older_than = older_than_days.map(|d| Duration::from_secs(u64::from(d) * 86_400));
    let cutoff = older_than.map(|age| {
        let at = time::OffsetDateTime::now_utc() - age;
        at.format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    });
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let repos = repositories(store, &cwd)?;
    let (found, kept) = survey(
        store,
        &repos,
        &std::env::temp_dir(),
        cutoff.as_deref(),
        older_than,
    )?;
    let mut out = String::new();
    let mut failed = 0;
    for leftover in &found {
        let what = match (leftover.kind, &leftover.branch) {
            (Kind::Branch, Some(branch)) => {
                format!("branch {branch} in {}", leftover.path.display())
            }
            (Kind::GitDir, _) => format!("moot's git dir {}", leftover.path.display()),
            _ => format!("work tree {}", leftover.path.display()),
        };
        if dry_run {
            out.push_str(&format!("would remove {what} ({})\n", leftover.why));
            continue;
        }
        match remove(leftover) {
            Ok(()) => out.push_str(&format!("removed {what} ({})\n", leftover.why)),
            Err(why) => {
                failed += 1;
                out.push_str(&format!("could not remove {what}: {why}\n"));
            }
        }
    }
    if found.is_empty() {
        out.push_str("nothing to prune\n");
    }
    for why in &kept {
        out.push_str(&format!("kept: {why}\n"));
    }
    out.push_str(
        "The journal keeps every version's files, tests and record: `moot code versions | diff | apply` read them from it.\n",
    );
    print(&crate::sanitize::clean(&out))?;
    if failed > 0 {
        return Err(Failure::runtime(format!(
            "{failed} leftover(s) could not be removed (named above)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn debate(status: &str, finished: Option<&str>) -> Debate {
        serde_json::from_value(serde_json::json!({
            "id": "DEB-abc12345", "question": "q", "protocol": "code", "status": status,
            "config": {}, "seats": [], "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-02T00:00:00Z", "finished_at": finished,
            "confidence": null, "error": null
        }))
        .unwrap()
    }

    #[test]
    fn a_debate_that_may_be_resumed_keeps_its_leftovers_and_a_recent_one_too() {
        for status in ["paused", "failed", "interrupted", "running", "pending"] {
            assert!(
                matches!(judge(&debate(status, None), None), Verdict::Stay(why) if why.contains("may be resumed")),
                "{status}"
            );
        }
        let done = debate("completed", Some("2026-03-01T00:00:00Z"));
        assert!(matches!(judge(&done, None), Verdict::Go(_)));
        assert!(matches!(
            judge(&done, Some("2026-04-01T00:00:00Z")),
            Verdict::Go(_)
        ));
        assert!(
            matches!(judge(&done, Some("2026-02-01T00:00:00Z")), Verdict::Stay(why) if why.contains("too recently"))
        );
        assert!(matches!(
            judge(&debate("cancelled", None), None),
            Verdict::Go(_)
        ));
    }

    #[test]
    fn only_moots_own_debate_ids_are_taken_for_leftovers() {
        assert!(is_debate_id("DEB-abc12345"));
        for not in ["DEB-", "DEB-../x", "deb-abc", "DEB-a/b", "main", "DEB-a b"] {
            assert!(!is_debate_id(not), "{not}");
        }
    }
}
