//! The record of a code debate (design note 004): the task, clarifications, the final code
//! (fenced, language-tagged), the versions table, the test history, the red team's findings and
//! how they were closed, the reflections, and the recommendation. A pure function of the result.

use super::detect::language;
use super::hooks::HookResult;
use super::versions::{Version, Winner};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// A failed attempt's written reflection (Reflexion).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reflection {
    pub attempt: u32,
    pub root_cause: String,
    pub went_wrong: String,
    pub change_next: String,
    pub confidence: f64,
}

/// What the red team found, and the version that closed it (if one did).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub round: u32,
    pub attack: String,
    /// The test file red wrote for it, when it could.
    pub test: Option<String>,
    /// That file's contents: red's tests are artifacts of the debate, even outside git.
    #[serde(default)]
    pub test_content: Option<String>,
    pub closed_by: Option<u32>,
}

/// A code debate's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeResult {
    pub task: String,
    /// (question, answer, who answered).
    pub clarifications: Vec<(String, String, String)>,
    pub versions: Vec<Version>,
    pub winner: Option<u32>,
    pub winner_reason: String,
    /// (version, hook result) in the order they ran.
    pub tests: Vec<(u32, HookResult)>,
    pub findings: Vec<Finding>,
    pub reflections: Vec<Reflection>,
    pub recommendation: String,
    /// No hooks ran, and why (no `--test` and none detected, say).
    pub hooks_note: Option<String>,
    pub notes: Vec<String>,
}

/// A file's contents in a fence tagged with its language, long enough not to be closed by the
/// contents.
fn fenced_file(path: &str, content: &str) -> String {
    let fence = if content.contains("```") {
        "````"
    } else {
        "```"
    };
    format!(
        "{fence}{}\n{}\n{fence}\n",
        language(path),
        content.trim_end()
    )
}

/// The hook results of version `number`, from a test history of (version, result).
pub fn tests_of(tests: &[(u32, HookResult)], number: u32) -> impl Iterator<Item = &HookResult> {
    tests
        .iter()
        .filter(move |(n, _)| *n == number)
        .map(|(_, r)| r)
}

/// One attempt of the Reflexion loop, as the record holds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Episode {
    pub attempt: u32,
    pub version: Version,
    pub tests: Vec<HookResult>,
    pub reflection: Option<Reflection>,
}

/// Seconds with one decimal, as the test history shows them.
fn format_seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

impl CodeResult {
    /// How long the hooks ran on version `number`, in milliseconds (the convergence hook's
    /// run included): a cost the versions table shows beside the lines.
    pub fn hook_time(&self, number: u32) -> u64 {
        tests_of(&self.tests, number).map(|r| r.duration_ms).sum()
    }

    /// The Reflexion loop's attempts: the proposal (the self-check's last draft when it ran)
    /// and every version the loop wrote after it, each with its tests and its reflection.
    pub fn episodes(&self) -> Vec<Episode> {
        let drafted = self.versions.iter().rfind(|v| v.phase == "self_check");
        drafted
            .into_iter()
            .chain(self.versions.iter().filter(|v| v.phase == "proposal"))
            .enumerate()
            .map(|(i, version)| {
                let attempt = i as u32 + 1;
                Episode {
                    attempt,
                    version: version.clone(),
                    tests: tests_of(&self.tests, version.number).cloned().collect(),
                    reflection: self
                        .reflections
                        .iter()
                        .find(|r| r.attempt == attempt)
                        .cloned(),
                }
            })
            .collect()
    }

    pub fn with_winner(mut self, winner: Option<Winner>) -> Self {
        if let Some(winner) = winner {
            self.winner = Some(winner.number);
            self.winner_reason = winner.reason;
        }
        self
    }

    /// The versions as a table: phase, summary, quality, tests, hooks, size and hook time.
    fn versions_table(&self, out: &mut String) {
        out.push_str("## Versions\n\n| version | phase | summary | quality | tests | pass rate | hooks | lines | hook time |\n|---|---|---|---|---|---|---|---|---|\n");
        for version in &self.versions {
            let _ = writeln!(
                out,
                "| {}{} | {} | {} | {} | {} | {} | {} | {} | {} |",
                version.number,
                if Some(version.number) == self.winner {
                    " ★"
                } else {
                    ""
                },
                version.phase.replace('_', "-"),
                version.summary.replace('|', "/").replace('\n', " "),
                version
                    .quality
                    .map_or("–".into(), |q| format!("{:.2}", q.score())),
                match (version.passed, version.failed, version.hooks_ok) {
                    (Some(p), Some(f), _) => format!("{p} passed, {f} failed"),
                    (_, _, Some(false)) => "failed".into(),
                    _ => "–".into(),
                },
                version
                    .pass_rate()
                    .map_or("–".into(), |r| format!("{:.0} %", r * 100.0)),
                match version.hooks_ok {
                    Some(true) => "pass",
                    Some(false) => "fail",
                    None => "not run",
                },
                version.lines(),
                format_seconds(self.hook_time(version.number))
            );
        }
    }

    /// Red's findings, each closed or open, then the tests red wrote.
    fn findings_section(&self, out: &mut String) {
        if !self.findings.is_empty() {
            out.push_str("## Red team findings\n\n");
            for finding in &self.findings {
                let (round, attack) = (finding.round, &finding.attack);
                let test = finding.test.as_deref().map(|t| format!(" (test `{t}`)"));
                let test = test.unwrap_or_default();
                let state = finding
                    .closed_by
                    .map_or("still open".into(), |v| format!("closed by v{v}"));
                let _ = writeln!(out, "- round {round}: {attack}{test} — {state}");
            }
            out.push('\n');
            for finding in &self.findings {
                if let (Some(path), Some(content)) = (&finding.test, &finding.test_content) {
                    let _ = writeln!(
                        out,
                        "Red's test `{path}`:\n\n{}",
                        fenced_file(path, content)
                    );
                }
            }
        }
    }

    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Code debate: {}\n", self.task.trim());
        if !self.clarifications.is_empty() {
            out.push_str("## Clarifications\n\n");
            for (question, answer, by) in &self.clarifications {
                let _ = writeln!(out, "- **{question}** {answer} *({by})*");
            }
            out.push('\n');
        }
        out.push_str("## Final code\n\n");
        match self
            .winner
            .and_then(|n| self.versions.iter().find(|v| v.number == n))
        {
            Some(version) => {
                let _ = writeln!(
                    out,
                    "Version {} won: {}.\n",
                    version.number, self.winner_reason
                );
                for (path, content) in &version.files {
                    let _ = writeln!(out, "`{path}`\n\n{}", fenced_file(path, content));
                }
            }
            None => out.push_str("No version was written.\n\n"),
        }
        self.versions_table(&mut out);
        out.push_str("\n## Test history\n\n");
        match &self.hooks_note {
            Some(note) if self.tests.is_empty() => {
                let _ = writeln!(out, "{note}\n");
            }
            _ => {
                for (version, result) in &self.tests {
                    let _ = writeln!(out, "- v{version} {}", result.summary());
                }
                out.push('\n');
            }
        }
        self.findings_section(&mut out);
        if !self.reflections.is_empty() {
            out.push_str("## Reflections\n\n");
            for r in &self.reflections {
                let (attempt, cause, wrong, next) =
                    (r.attempt, &r.root_cause, &r.went_wrong, &r.change_next);
                let percent = r.confidence * 100.0;
                let _ = writeln!(
                    out,
                    "- attempt {attempt}: root cause — {cause}; what went wrong — {wrong}; next — {next} (confidence {percent:.0} %)"
                );
            }
            out.push('\n');
        }
        let _ = writeln!(out, "## Recommendation\n\n{}\n", self.recommendation.trim());
        if !self.notes.is_empty() {
            out.push_str("## Notes\n\n");
            for note in &self.notes {
                let _ = writeln!(out, "- {note}");
            }
        }
        crate::sanitize::clean(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::versions::{Quality, winner};
    use std::time::Duration;

    fn hook(passed: u32, failed: u32, exit: i32) -> HookResult {
        HookResult {
            name: "test".into(),
            command: "cargo test retry".into(),
            exit: Some(exit),
            timed_out: false,
            duration_ms: Duration::from_millis(1200).as_millis() as u64,
            passed: Some(passed),
            failed: Some(failed),
            tail: String::new(),
            dropped: 0,
            offline: true,
            sandbox: None,
            error: None,
            limits: None,
            stopped: None,
        }
    }

    fn version(number: u32, ok: bool, code: &str) -> Version {
        Version {
            number,
            language: "rust".into(),
            files: vec![("src/retry.rs".into(), code.into())],
            commit: None,
            quality: Some(Quality {
                correctness: 0.8,
                maintainability: 0.7,
                performance: 0.6,
                security: 0.9,
                tests: 0.5,
            }),
            passed: Some(if ok { 3 } else { 2 }),
            failed: Some(if ok { 0 } else { 1 }),
            hooks_ok: Some(ok),
            summary: format!("version {number}"),
            phase: "proposal".into(),
        }
    }

    #[test]
    fn the_record_has_every_section_of_the_note() {
        let versions = vec![
            version(1, false, "fn retry() {}"),
            version(2, true, "fn retry() { /* honours Retry-After */ }"),
        ];
        let result = CodeResult {
            task: "Make retry honour Retry-After and add jitter".into(),
            clarifications: vec![(
                "Is jitter full or equal?".into(),
                "Equal jitter.".into(),
                "alice".into(),
            )],
            winner: None,
            winner_reason: String::new(),
            tests: vec![(1, hook(2, 1, 101)), (2, hook(3, 0, 0))],
            findings: vec![Finding {
                round: 1,
                attack: "Retry-After: -1 loops forever".into(),
                test: Some("tests/red_retry_after.rs".into()),
                test_content: Some("#[test] fn negative() {}\n".into()),
                closed_by: Some(2),
            }],
            reflections: vec![Reflection {
                attempt: 1,
                root_cause: "the header was read as seconds only".into(),
                went_wrong: "an HTTP date failed to parse".into(),
                change_next: "parse both forms".into(),
                confidence: 0.8,
            }],
            recommendation: "Apply version 2.".into(),
            hooks_note: None,
            notes: vec![],
            versions: versions.clone(),
        }
        .with_winner(winner(&versions));
        let markdown = result.to_markdown();
        for needle in [
            "# Code debate: Make retry honour Retry-After",
            "- **Is jitter full or equal?** Equal jitter. *(alice)*",
            "Version 2 won: it passes its tests",
            "```rust\nfn retry() { /* honours Retry-After */ }\n```",
            "| 2 ★ | proposal | version 2 | 0.70 | 3 passed, 0 failed | 100 % | pass | 1 | 1.2 s |",
            "| 1 | proposal | version 1 | 0.70 | 2 passed, 1 failed | 67 % | fail | 1 | 1.2 s |",
            "- v1 test: 2 passed, 1 failed (exit 101, 1.2 s)",
            "Retry-After: -1 loops forever (test `tests/red_retry_after.rs`) — closed by v2",
            "Red's test `tests/red_retry_after.rs`:\n\n```rust\n#[test] fn negative() {}\n```",
            "attempt 1: root cause — the header was read as seconds only",
            "## Recommendation\n\nApply version 2.",
        ] {
            assert!(
                markdown.contains(needle),
                "missing {needle:?} in:\n{markdown}"
            );
        }
        let no_hooks = CodeResult {
            tests: vec![],
            hooks_note: Some("No --test was given and none was detected: no hooks ran.".into()),
            ..result
        };
        assert!(
            no_hooks
                .to_markdown()
                .contains("none was detected: no hooks ran")
        );
    }
}
