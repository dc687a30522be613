//! A code problem's hidden tests, run on an arm's code in the code debate's sandbox (its hooks:
//! Landlock or bubblewrap, no network, a time limit and an output cap), with its runtime, and
//! lint findings where a linter for the language is installed.

use super::data::CodeTask;
use crate::code::hooks::{self, Hook};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// How long the hidden tests of one problem may run.
const TEST_LIMIT: Duration = Duration::from_secs(20);
/// Output kept from a run.
const OUTPUT_CAP: usize = 4096;

/// What the hidden tests said of one arm's code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeCheck {
    pub passed: bool,
    /// How long the tests ran.
    pub runtime_ms: u64,
    /// Findings of the language's linter (shellcheck, pyflakes), when one is installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lint: Option<usize>,
    /// The sandbox the tests ran in (`landlock ABI 6`, `bubblewrap`), as the hooks say it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// The end of the tests' output, or why they could not run.
    pub output: String,
}

/// The program the hidden tests run, and the command that runs it.
fn program(task: &CodeTask, code: &str) -> (&'static str, String, &'static str) {
    match task.language.as_str() {
        "sh" => (
            "solution.sh",
            format!("{code}\n\n{}\n", task.test),
            "sh solution.sh",
        ),
        // HumanEval: the prompt (its imports, the stub the code replaces), the code, the
        // tests' `check`, called on the entry point.
        _ => (
            "solution.py",
            format!(
                "{}\n{code}\n\n{}\n\ncheck({})\n",
                task.prompt, task.test, task.entry_point
            ),
            "python3 solution.py",
        ),
    }
}

/// The linter's findings on the code alone, when one is installed for the language.
async fn lint(task: &CodeTask, code: &str, dir: &Path, unsandboxed: bool) -> Option<usize> {
    let (linter, file, text) = match task.language.as_str() {
        "sh" => ("shellcheck", "candidate.sh", format!("#!/bin/sh\n{code}\n")),
        _ => (
            "pyflakes",
            "candidate.py",
            format!("{}\n{code}\n", task.prompt),
        ),
    };
    crate::code::sandbox::on_path(linter)?;
    std::fs::write(dir.join(file), text).ok()?;
    let command = match linter {
        "shellcheck" => format!("shellcheck -f gcc {file}"),
        _ => format!("pyflakes {file}"),
    };
    let hook = Hook {
        name: "lint".into(),
        command,
        timeout: TEST_LIMIT,
        output_cap: OUTPUT_CAP,
        unsandboxed,
    };
    let result = hooks::run(&hook, dir).await;
    result.error.is_none().then(|| {
        result
            .tail
            .lines()
            .filter(|line| line.contains(file))
            .count()
    })
}

/// Runs `task`'s hidden tests on `code` in a fresh directory, sandboxed as a code debate's
/// hooks are (`unsandboxed` as `--unsandboxed-hooks`).
pub async fn check(task: &CodeTask, code: &str, unsandboxed: bool) -> CodeCheck {
    let failed = |output: String| CodeCheck {
        passed: false,
        runtime_ms: 0,
        lint: None,
        sandbox: None,
        output,
    };
    let dir = match tempfile::Builder::new().prefix("moot-bench-").tempdir() {
        Ok(dir) => dir,
        Err(e) => return failed(format!("cannot make a directory for the tests: {e}")),
    };
    let (file, text, command) = program(task, code);
    if let Err(e) = std::fs::write(dir.path().join(file), text) {
        return failed(format!("cannot write {file}: {e}"));
    }
    let hook = Hook {
        name: "hidden tests".into(),
        command: command.into(),
        timeout: TEST_LIMIT,
        output_cap: OUTPUT_CAP,
        unsandboxed,
    };
    let result = hooks::run(&hook, dir.path()).await;
    let lint = lint(task, code, dir.path(), unsandboxed).await;
    let output = match &result.error {
        Some(error) => error.clone(),
        None if result.timed_out => format!("timed out after {} s", TEST_LIMIT.as_secs()),
        None => result
            .tail
            .chars()
            .rev()
            .take(600)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect(),
    };
    CodeCheck {
        passed: result.error.is_none() && result.ok(),
        runtime_ms: result.duration_ms,
        lint,
        sandbox: result.sandbox.clone(),
        output,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add() -> CodeTask {
        CodeTask {
            task_id: "t".into(),
            prompt: "print the sum of its two arguments".into(),
            entry_point: "add".into(),
            test: "[ \"$(add 2 3)\" = 5 ] || exit 1".into(),
            language: "sh".into(),
        }
    }

    #[tokio::test]
    async fn hidden_tests_pass_right_code_and_fail_wrong_code_in_the_sandbox() {
        let right = check(&add(), "add() { echo $(( $1 + $2 )); }", false).await;
        assert!(right.passed, "{right:?}");
        assert!(right.sandbox.is_some(), "run in a sandbox: {right:?}");
        let wrong = check(&add(), "add() { echo $(( $1 - $2 )); }", false).await;
        assert!(!wrong.passed, "{wrong:?}");
        // The tests cannot reach outside their directory.
        let escape = check(
            &add(),
            "add() { echo $(( $1 + $2 )); }\necho x > /tmp/moot-bench-escape-$$ || exit 1",
            false,
        )
        .await;
        assert!(!escape.passed, "{escape:?}");
    }

    #[test]
    fn a_humaneval_program_is_its_prompt_the_code_its_tests_and_the_check_call() {
        let task = CodeTask {
            task_id: "HumanEval/0".into(),
            prompt: "def inc(x):\n    \"\"\"x + 1\"\"\"\n".into(),
            entry_point: "inc".into(),
            test: "def check(candidate):\n    assert candidate(1) == 2\n".into(),
            language: "python".into(),
        };
        let (file, text, command) = program(&task, "def inc(x):\n    return x + 1\n");
        assert_eq!((file, command), ("solution.py", "python3 solution.py"));
        assert!(text.starts_with("def inc(x):\n    \"\"\"x + 1\"\"\""));
        assert!(text.trim_end().ends_with("check(inc)"));
    }
}
