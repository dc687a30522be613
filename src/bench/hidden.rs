//! A code problem's hidden tests, run on an arm's code in the code debate's sandbox (its hooks:
//! Landlock or bubblewrap, no network, a time limit, caps and an output cap) in a process
//! apart from the solution's, with its runtime, and lint findings where a linter for the
//! language is installed.

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

/// The files the hidden tests run from, and the command that runs them. The solution never
/// shares a process with the tests (HumanEval's harness keeps them apart too): its `exit 0`,
/// `sys.exit(0)` or `os._exit(0)` ends only its own process, never the tests', so a pass is
/// the test program itself reaching its end with status 0.
fn program(task: &CodeTask, code: &str) -> (Vec<(&'static str, String)>, &'static str) {
    let entry = &task.entry_point;
    match task.language.as_str() {
        // Each call sources the solution in a subshell of its own and calls it there.
        "sh" => (
            vec![
                ("solution.sh", format!("{code}\n")),
                (
                    "tests.sh",
                    format!(
                        "{entry}() ( . ./solution.sh; {entry} \"$@\" )\n\n{}\n\necho 'hidden tests: all ran'\n",
                        task.test
                    ),
                ),
            ],
            "sh tests.sh",
        ),
        // HumanEval: the prompt (its imports, the stub the code replaces) and the code in
        // `solution.py`; the tests' `check` called on a stand-in that runs the entry point in
        // a fresh process for each call, arguments and result crossing as Python literals.
        _ => (
            vec![
                ("solution.py", format!("{}\n{code}\n", task.prompt)),
                ("tests.py", python_tests(task)),
            ],
            "python3 tests.py",
        ),
    }
}

/// The Python test program around `task`'s `check`.
fn python_tests(task: &CodeTask) -> String {
    format!(
        r#"import ast, ctypes, subprocess, sys

# Not dumpable: a solution process cannot read or write this one's memory.
try:
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
except Exception:
    pass

RUNNER = """
import ast, sys
args, kwargs = ast.literal_eval(sys.stdin.read())
space = {{"__name__": "solution"}}
exec(compile(open("solution.py").read(), "solution.py", "exec"), space)
result = space[{entry:?}](*args, **kwargs)
with open(int(sys.argv[1]), "w") as out:
    out.write(repr(result))
"""


def candidate(*args, **kwargs):
    import os
    read, write = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-c", RUNNER, str(write)], stdin=subprocess.PIPE, pass_fds=(write,),
    )
    os.close(write)
    child.stdin.write(repr((list(args), kwargs)).encode())
    child.stdin.close()
    with os.fdopen(read) as answer:
        text = answer.read()
    if child.wait() != 0 or not text:
        raise AssertionError("the solution ended without returning (exit %s)" % child.returncode)
    return ast.literal_eval(text)


{test}

check(candidate)
print("hidden tests: all ran")
"#,
        entry = task.entry_point,
        test = task.test
    )
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
        limits: crate::code::sandbox::Limits::default(),
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
    let (files, command) = program(task, code);
    for (file, text) in files {
        if let Err(e) = std::fs::write(dir.path().join(file), text) {
            return failed(format!("cannot write {file}: {e}"));
        }
    }
    let hook = Hook {
        name: "hidden tests".into(),
        command: command.into(),
        timeout: TEST_LIMIT,
        output_cap: OUTPUT_CAP,
        unsandboxed,
        limits: crate::code::sandbox::Limits::default(),
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
    // The test program's own end, not counts in its output (which the solution can print).
    let passed = result.error.is_none()
        && result.exit == Some(0)
        && !result.timed_out
        && result.stopped.is_none();
    CodeCheck {
        passed,
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

    /// A solution that ends its process with success, before or instead of answering,
    /// fails: the tests run apart from it and must reach their end.
    #[tokio::test]
    async fn a_solution_that_exits_early_fails_in_shell_and_python() {
        for code in [
            "add() { echo 0; }\nexit 0",
            "exit 0",
            "add() { exit 0; }",
            "add() { echo $(( $1 + $2 )); }\nkill -9 $$",
        ] {
            let check = check(&add(), code, false).await;
            assert!(!check.passed, "{code:?} passed: {check:?}");
        }
        let task = CodeTask {
            task_id: "HumanEval/0".into(),
            prompt: "def inc(x):\n    \"\"\"x + 1\"\"\"\n".into(),
            entry_point: "inc".into(),
            test: "def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(-1) == 0\n".into(),
            language: "python".into(),
        };
        let right = check(&task, "def inc(x):\n    return x + 1\n", false).await;
        assert!(right.passed, "{right:?}");
        for code in [
            "import sys\nsys.exit(0)\n",
            "def inc(x):\n    import sys; sys.exit(0)\n",
            "def inc(x):\n    import os; os._exit(0)\n",
            "import os\nos._exit(0)\n",
            "def inc(x):\n    import os, signal; os.kill(os.getppid(), signal.SIGKILL)\n",
        ] {
            let check = check(&task, code, false).await;
            assert!(!check.passed, "{code:?} passed: {check:?}");
        }
    }

    #[test]
    fn the_solution_and_the_tests_are_separate_files() {
        let task = CodeTask {
            task_id: "HumanEval/0".into(),
            prompt: "def inc(x):\n    \"\"\"x + 1\"\"\"\n".into(),
            entry_point: "inc".into(),
            test: "def check(candidate):\n    assert candidate(1) == 2\n".into(),
            language: "python".into(),
        };
        let (files, command) = program(&task, "def inc(x):\n    return x + 1\n");
        assert_eq!(command, "python3 tests.py");
        assert_eq!(files[0].0, "solution.py");
        assert!(files[0].1.starts_with("def inc(x):\n    \"\"\"x + 1\"\"\""));
        assert!(!files[0].1.contains("check("), "{}", files[0].1);
        assert!(files[1].1.contains("check(candidate)"));
        let (files, command) = program(&add(), "add() { echo 5; }");
        assert_eq!(command, "sh tests.sh");
        assert_eq!(files[0], ("solution.sh", "add() { echo 5; }\n".to_string()));
        assert!(
            files[1]
                .1
                .starts_with("add() ( . ./solution.sh; add \"$@\" )")
        );
    }
}
