//! A code debate's versions (design note 004): each with its number, language, files, the
//! Judge's rubric (0–1 per criterion) and its test results; and the winner, chosen by tests
//! first (a version that fails its tests never wins over one that passes), then quality.

use super::hooks::HookResult;
use serde::{Deserialize, Serialize};

/// The Judge's rubric, each criterion 0–1.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Quality {
    pub correctness: f64,
    pub maintainability: f64,
    pub performance: f64,
    pub security: f64,
    pub tests: f64,
}

impl Quality {
    /// The mean of the five criteria.
    pub fn score(&self) -> f64 {
        (self.correctness + self.maintainability + self.performance + self.security + self.tests)
            / 5.0
    }
}

/// One version of the code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Version {
    pub number: u32,
    pub language: String,
    /// Path → contents, as written to the work tree.
    pub files: Vec<(String, String)>,
    /// The snapshot's commit on the debate's branch, when in git.
    pub commit: Option<String>,
    pub quality: Option<Quality>,
    /// Tests passed and failed by the hooks on this version; None when no hook counted.
    pub passed: Option<u32>,
    pub failed: Option<u32>,
    /// Whether every hook on it succeeded (None: no hook ran).
    pub hooks_ok: Option<bool>,
    /// The writer's one-line summary of it (its commit message).
    #[serde(default)]
    pub summary: String,
    /// The phase that wrote it: self_check, proposal, optimization, defence.
    #[serde(default)]
    pub phase: String,
}

impl Version {
    /// Share of tests passed, when tests were counted.
    pub fn pass_rate(&self) -> Option<f64> {
        let (passed, failed) = (self.passed?, self.failed.unwrap_or(0));
        let total = passed + failed;
        (total > 0).then(|| f64::from(passed) / f64::from(total))
    }

    /// Takes the hooks' results on it as its test counts and verdict (no results: untouched).
    pub fn take_results(&mut self, results: &[HookResult]) {
        if results.is_empty() {
            return;
        }
        // No runner's counts in any output: no counts, not "0 passed, 0 failed".
        let counted = results
            .iter()
            .any(|r| r.passed.is_some() || r.failed.is_some());
        self.passed = counted.then(|| results.iter().filter_map(|r| r.passed).sum());
        self.failed = counted.then(|| results.iter().filter_map(|r| r.failed).sum());
        self.hooks_ok = Some(results.iter().all(HookResult::ok));
    }

    /// Lines across the files it wrote: a size metric beside the scores.
    pub fn lines(&self) -> usize {
        self.files.iter().map(|(_, c)| c.lines().count()).sum()
    }

    /// Passing: every hook succeeded (a version no hook ran on is not known to pass).
    pub fn passes(&self) -> bool {
        self.hooks_ok == Some(true)
    }
}

/// The commit that holds version `number`: its own, or the nearest earlier one when it changed
/// nothing; None when no version up to it was committed (outside git, say).
pub fn commit_of(versions: &[Version], number: u32) -> Option<String> {
    versions
        .iter()
        .filter(|v| v.number <= number)
        .filter_map(|v| v.commit.clone())
        .next_back()
}

/// The project's files as version `number` left them: the files the debate started from
/// (`base`), overwritten by each version up to it in turn. A version writes whole files, but
/// not every file each time.
pub fn files_at(
    base: &[(String, String)],
    versions: &[Version],
    number: u32,
) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = base.to_vec();
    for version in versions.iter().filter(|v| v.number <= number) {
        overlay(&mut files, &version.files);
    }
    files
}

/// Writes `over` onto `files`: a path already there takes the new contents, a new one is added.
pub fn overlay(files: &mut Vec<(String, String)>, over: &[(String, String)]) {
    for (path, content) in over {
        match files.iter_mut().find(|(p, _)| p == path) {
            Some(file) => file.1 = content.clone(),
            None => files.push((path.clone(), content.clone())),
        }
    }
}

/// The most lines of a diff kept for the faces.
const LONGEST_DIFF: usize = 400;

/// A unified diff from one version's files to the next (a file new in `to` is diffed from
/// nothing), at most `LONGEST_DIFF` lines.
pub fn diff(from: &[(String, String)], to: &[(String, String)]) -> String {
    let out = full_diff(from, to);
    let lines: Vec<&str> = out.lines().collect();
    if lines.len() > LONGEST_DIFF {
        let mut kept = lines[..LONGEST_DIFF].join("\n");
        kept.push_str(&format!("\n… {} more lines", lines.len() - LONGEST_DIFF));
        return kept;
    }
    out
}

/// The whole unified diff from one set of files to another, for `moot code diff` outside git.
pub fn full_diff(from: &[(String, String)], to: &[(String, String)]) -> String {
    let mut out = String::new();
    for (path, content) in to {
        let before = from
            .iter()
            .find(|(p, _)| p == path)
            .map_or("", |(_, c)| c.as_str());
        if before == content {
            continue;
        }
        let text = similar::TextDiff::from_lines(before, content.as_str())
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{path}"), &format!("b/{path}"))
            .to_string();
        out.push_str(&text);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Why a version won, for the record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Winner {
    pub number: u32,
    pub reason: String,
}

/// The winner: passing versions before failing or untested ones, then the higher pass rate,
/// then the higher quality score, then the later version.
pub fn winner(versions: &[Version]) -> Option<Winner> {
    let key = |v: &Version| {
        (
            v.passes(),
            v.pass_rate().unwrap_or(0.0),
            v.quality.map_or(0.0, |q| q.score()),
            v.number,
        )
    };
    let best = versions.iter().max_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0)
            .then(ka.1.total_cmp(&kb.1))
            .then(ka.2.total_cmp(&kb.2))
            .then(ka.3.cmp(&kb.3))
    })?;
    let passing = versions.iter().filter(|v| v.passes()).count();
    let reason = if best.passes() {
        format!(
            "it passes its tests{}{} ({} of {} versions pass)",
            best.pass_rate()
                .map(|r| format!(" ({:.0} %)", r * 100.0))
                .unwrap_or_default(),
            best.quality
                .map(|q| format!(" with the best quality score among them, {:.2}", q.score()))
                .unwrap_or_default(),
            passing,
            versions.len()
        )
    } else if best.hooks_ok.is_none() {
        "no tests ran on any version; chosen by quality score".to_string()
    } else {
        format!(
            "no version passes its tests; it passes the most ({})",
            best.pass_rate()
                .map(|r| format!("{:.0} %", r * 100.0))
                .unwrap_or_else(|| "none counted".into())
        )
    };
    Some(Winner {
        number: best.number,
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(number: u32, hooks_ok: Option<bool>, tests: (u32, u32), quality: f64) -> Version {
        Version {
            number,
            language: "rust".into(),
            files: vec![("src/retry.rs".into(), format!("// v{number}"))],
            commit: None,
            quality: Some(Quality {
                correctness: quality,
                maintainability: quality,
                performance: quality,
                security: quality,
                tests: quality,
            }),
            passed: Some(tests.0),
            failed: Some(tests.1),
            hooks_ok,
            summary: String::new(),
            phase: "proposal".into(),
        }
    }

    #[test]
    fn a_failing_version_never_wins_over_a_passing_one() {
        let versions = [
            version(1, Some(false), (4, 1), 0.95),
            version(2, Some(true), (5, 0), 0.60),
            version(3, Some(true), (5, 0), 0.70),
        ];
        let won = winner(&versions).unwrap();
        assert_eq!(won.number, 3);
        assert!(
            won.reason.contains("passes its tests (100 %)"),
            "{}",
            won.reason
        );
        assert!(
            won.reason.contains("0.70") && won.reason.contains("2 of 3"),
            "{}",
            won.reason
        );
        // Equal in every way: the later version.
        let tie = [
            version(1, Some(true), (5, 0), 0.7),
            version(2, Some(true), (5, 0), 0.7),
        ];
        assert_eq!(winner(&tie).unwrap().number, 2);
    }

    #[test]
    fn a_diff_shows_what_changed_and_a_new_file_whole() {
        let v1 = vec![("calc.sh".to_string(), "a\nb\n".to_string())];
        let v2 = vec![
            ("calc.sh".to_string(), "a\nc\n".to_string()),
            ("test.sh".to_string(), "t\n".to_string()),
        ];
        let text = diff(&v1, &v2);
        assert!(text.contains("--- a/calc.sh\n+++ b/calc.sh"), "{text}");
        assert!(text.contains("-b\n+c"), "{text}");
        assert!(
            text.contains("+++ b/test.sh") && text.contains("+t"),
            "{text}"
        );
        assert_eq!(diff(&v2, &v2), "");
        // A version that rewrote only the test is diffed against everything before it.
        let versions = [
            Version {
                files: v2.clone(),
                ..version(1, None, (0, 0), 0.5)
            },
            Version {
                files: vec![("test.sh".into(), "t2\n".into())],
                ..version(2, None, (0, 0), 0.5)
            },
        ];
        let base = vec![("calc.sh".to_string(), "a\nb\n".to_string())];
        assert_eq!(files_at(&base, &versions, 0), base);
        let at_two = files_at(&base, &versions, 2);
        assert_eq!(
            at_two,
            vec![
                ("calc.sh".to_string(), "a\nc\n".to_string()),
                ("test.sh".to_string(), "t2\n".to_string())
            ]
        );
        let step = diff(&files_at(&base, &versions, 1), &at_two);
        assert!(
            step.contains("-t\n+t2") && !step.contains("calc.sh"),
            "{step}"
        );
        let long: String = (0..1000).map(|i| format!("{i}\n")).collect();
        let cut = diff(&[], &[("big".into(), long)]);
        assert!(cut.ends_with("more lines") && cut.lines().count() == LONGEST_DIFF + 1);
    }

    #[test]
    fn without_a_passing_version_the_most_passing_wins_and_says_so() {
        let versions = [
            version(1, Some(false), (2, 3), 0.9),
            version(2, Some(false), (4, 1), 0.5),
        ];
        let won = winner(&versions).unwrap();
        assert_eq!(won.number, 2);
        assert!(won.reason.contains("no version passes") && won.reason.contains("80 %"));
        let untested = [Version {
            hooks_ok: None,
            passed: None,
            failed: None,
            ..version(1, None, (0, 0), 0.4)
        }];
        assert!(winner(&untested).unwrap().reason.contains("no tests ran"));
        assert_eq!(winner(&[]), None);
        assert_eq!(version(1, None, (3, 1), 0.5).pass_rate(), Some(0.75));
    }
}
