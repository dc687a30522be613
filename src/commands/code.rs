//! `moot code`: a code debate's versions, diffs and apply.

use super::{Failure, print, print_json};
use crate::sanitize;
use crate::store::Store;

/// `moot code versions | diff | apply`: a code debate's versions, read from its result and its
/// branch.
pub fn code(store: &Store, action: crate::cli::CodeAction) -> Result<(), Failure> {
    use crate::cli::CodeAction;
    use crate::code::history::History;
    let id = match &action {
        CodeAction::Versions { id, .. }
        | CodeAction::Episodes { id, .. }
        | CodeAction::Diff { id, .. }
        | CodeAction::Apply { id, .. } => id,
        // Not about one debate: every finished one's leftovers.
        CodeAction::Prune {
            older_than,
            dry_run,
        } => return super::prune::prune(store, *older_than, *dry_run),
    };
    let (debate, result) = concluded_code_debate(store, id)?;
    let origin = std::path::PathBuf::from(
        debate.config["protocol_settings"]["origin"]
            .as_str()
            .unwrap_or("."),
    );
    // Outside git the versions live only in the journal: diffs and applies read their files.
    let in_git = debate.config["protocol_settings"]["in_git"]
        .as_bool()
        .unwrap_or(true);
    let history = history_of(store, &debate, &result, &origin, in_git);
    let base_files: Vec<(String, String)> =
        serde_json::from_value(debate.config["protocol_settings"]["files"].clone())
            .unwrap_or_default();
    let files_at =
        |number: u32| crate::code::versions::files_at(&base_files, &result.versions, number);
    let known = |number: u32| -> Result<u32, Failure> {
        if result.versions.iter().any(|v| v.number == number) {
            Ok(number)
        } else {
            Err(Failure::usage(format!(
                "{} has no version {number}; `moot code versions {}` lists them",
                debate.id, debate.id
            )))
        }
    };
    // A version that changed nothing has no commit of its own: the one before it stands.
    let commit_of = |number: u32| -> Result<String, Failure> {
        match crate::code::versions::commit_of(&result.versions, known(number)?) {
            Some(commit) => Ok(commit),
            None => history.base().map_err(|e| Failure::runtime(e.to_string())),
        }
    };
    match action {
        CodeAction::Prune {
            older_than,
            dry_run,
        } => super::prune::prune(store, older_than, dry_run),
        CodeAction::Versions { json, .. } => print_versions(&debate, &result, in_git, json),
        CodeAction::Episodes { json, .. } => print_episodes(&debate, &result, json),
        CodeAction::Diff { from, to, .. } if history == History::Journal => {
            let diff =
                crate::code::versions::full_diff(&files_at(known(from)?), &files_at(known(to)?));
            print(&format!("{}\n", sanitize::clean(&diff)))
        }
        CodeAction::Diff { from, to, .. } => {
            let diff = history
                .diff(&commit_of(from)?, &commit_of(to)?)
                .map_err(|e| Failure::runtime(e.to_string()))?;
            print(&format!("{}\n", sanitize::clean(&diff)))
        }
        CodeAction::Apply {
            version,
            force,
            failing,
            ..
        } => {
            let number = version.or(result.winner).ok_or_else(|| {
                Failure::usage(format!("{} has no winner; give --version N", debate.id))
            })?;
            let fails = result
                .versions
                .iter()
                .find(|v| v.number == number)
                .is_some_and(|v| v.hooks_ok == Some(false));
            if fails && !failing {
                return Err(refused_as_failing(&debate.id, &result, number));
            }
            let source = crate::code::apply::Source {
                origin: &origin,
                history: &history,
                base: &base_files,
                versions: &result.versions,
            };
            match crate::code::apply::apply_version(&source, known(number)?, force) {
                Ok(files) if files.is_empty() => print(&format!(
                    "version {number} changes nothing against your tree's base\n"
                )),
                Ok(files) => print(&format!(
                    "applied version {number} of {} to {}: {}\n",
                    debate.id,
                    origin.display(),
                    files.join(", ")
                )),
                Err(error) => Err(Failure::usage(error.to_string())),
            }
        }
    }
}

/// `moot code versions`: each version with its tests, quality, size and commit, the winner
/// starred; or all of it as JSON.
fn print_versions(
    debate: &crate::debate::Debate,
    result: &crate::code::record::CodeResult,
    in_git: bool,
    json: bool,
) -> Result<(), Failure> {
    if json {
        let value = serde_json::json!({
            "id": debate.id, "winner": result.winner, "versions": result.versions,
        });
        return print_json(&value);
    }
    let mut out = format!("{} · {}\n", debate.id, sanitize::clean(&debate.question));
    for v in &result.versions {
        out.push_str(&format!(
            "{} v{:<3} {:<8} quality {:<5} tests {:<18} {:>4} lines  {}\n",
            if Some(v.number) == result.winner {
                "★"
            } else {
                " "
            },
            v.number,
            match v.hooks_ok {
                Some(true) => "pass",
                Some(false) => "fail",
                None => "untested",
            },
            v.quality
                .map_or("–".into(), |q| format!("{:.2}", q.score())),
            match (v.passed, v.failed, v.hooks_ok) {
                (Some(p), Some(f), _) => format!("{p} passed, {f} failed"),
                (_, _, Some(false)) => "failed".into(),
                _ => "–".into(),
            },
            v.lines(),
            match v.commit.as_deref() {
                Some(commit) => commit.chars().take(12).collect::<String>(),
                None if in_git => "(no change)".into(),
                // Outside git no version has a commit: the journal holds them.
                None => String::new(),
            },
        ));
    }
    print(&out)
}

/// `moot code episodes`: each attempt's files, tests and reflection; or all of it as JSON.
fn print_episodes(
    debate: &crate::debate::Debate,
    result: &crate::code::record::CodeResult,
    json: bool,
) -> Result<(), Failure> {
    let episodes = result.episodes();
    if json {
        let value = serde_json::json!({"id": debate.id, "episodes": episodes});
        return print_json(&value);
    }
    let mut out = format!("{} · {}\n", debate.id, sanitize::clean(&debate.question));
    for episode in &episodes {
        out.push_str(&format!(
            "\nattempt {} · version {} · {}\n",
            episode.attempt,
            episode.version.number,
            if episode.version.passes() {
                "passed"
            } else {
                "failed"
            }
        ));
        for (path, content) in &episode.version.files {
            out.push_str(&format!("  {path} ({} lines)\n", content.lines().count()));
        }
        for test in &episode.tests {
            out.push_str(&format!("  {}\n", test.summary()));
        }
        if let Some(r) = &episode.reflection {
            out.push_str(&format!(
                "  reflection ({:.0} % confident): {} — {} — next: {}\n",
                r.confidence * 100.0,
                r.root_cause,
                r.went_wrong,
                r.change_next
            ));
        }
    }
    if episodes.is_empty() {
        out.push_str("no attempts were recorded\n");
    }
    print(&sanitize::clean(&out))
}

/// Why a version that fails its tests is not applied without --failing, naming the tests.
fn refused_as_failing(id: &str, result: &crate::code::record::CodeResult, number: u32) -> Failure {
    let which: Vec<String> = result
        .tests
        .iter()
        .filter(|(n, hook)| *n == number && !hook.ok())
        .map(|(_, hook)| hook.summary())
        .collect();
    Failure::usage(format!(
        "version {number} of {} fails its tests ({}), so nothing was applied; apply it anyway with --failing",
        id,
        if which.is_empty() {
            "its hooks failed".to_string()
        } else {
            sanitize::clean(&which.join("; "))
        }
    ))
}

/// A code debate that has concluded, with its result; any other debate is refused, named.
fn concluded_code_debate(
    store: &Store,
    id: &str,
) -> Result<(crate::debate::Debate, crate::code::record::CodeResult), Failure> {
    let debate = store.debate(id)?;
    if debate.protocol != "code" {
        return Err(Failure::usage(format!(
            "{} is a {} debate; `moot code` reads code debates",
            debate.id, debate.protocol
        )));
    }
    let result: crate::code::record::CodeResult = store
        .synthesis(&debate.id)?
        .and_then(|s| serde_json::from_value(s.data).ok())
        .ok_or_else(|| {
            Failure::usage(format!(
                "{} has no result yet: it has not concluded",
                debate.id
            ))
        })?;
    Ok((debate, result))
}

/// Where a code debate's versions are read: in git, moot's own git dir (or, for a debate from
/// before it kept one, a branch in the user's repository); with neither, or outside git, the
/// journal's files stand in.
fn history_of(
    store: &Store,
    debate: &crate::debate::Debate,
    result: &crate::code::record::CodeResult,
    origin: &std::path::Path,
    in_git: bool,
) -> crate::code::history::History {
    use crate::code::history::History;
    if in_git {
        History::locate(
            &store.versions_git_dir(&debate.id),
            origin,
            &debate.id,
            &result.versions,
        )
    } else {
        History::Journal
    }
}
