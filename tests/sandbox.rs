//! A code debate's hooks run model-written code: in the debate's work tree, a test that tries
//! to write outside it, plant a git hook in the user's repository or moot's own git dir, read
//! the key moot read from an oddly named variable and open a socket fails at all of them,
//! while a normal test passes in the same sandbox — under Landlock, and under bubblewrap as
//! on a kernel without Landlock.

mod support;

use moot::code::hooks::{self, Hook};
use moot::code::sandbox::{Kernel, Limits, Sandbox};
use moot::code::worktree::{Place, WorkTree};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@localhost")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@localhost")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

fn hook(command: String) -> Hook {
    Hook {
        name: "test".into(),
        command,
        timeout: Duration::from_secs(60),
        output_cap: 64 * 1024,
        unsandboxed: false,
        limits: moot::code::sandbox::Limits::default(),
    }
}

#[tokio::test]
async fn model_written_tests_cannot_escape_their_tree_read_the_key_or_reach_the_network() {
    assert!(
        moot::code::sandbox::landlock_abi().is_some(),
        "this kernel offers no Landlock; the sandbox cannot be tested here"
    );
    let origin = tempfile::tempdir().unwrap();
    std::fs::write(origin.path().join("calc.sh"), "echo $(( $1 + $2 ))\n").unwrap();
    git(origin.path(), &["init", "-q", "-b", "main"]);
    git(origin.path(), &["add", "-A"]);
    git(origin.path(), &["commit", "-q", "-m", "calc"]);
    let trees = tempfile::tempdir().unwrap();
    let tree = WorkTree::create(Place {
        origin: origin.path(),
        parent: trees.path(),
        git_dir: &trees.path().join("DEB-sandbox1.git"),
        debate_id: "DEB-sandbox1",
    })
    .unwrap();

    // The key moot read from `api_key_env = "LLM_CRED"`, as providers register it.
    let key = "sk-sandbox-secret-0123456789abcdef";
    moot::sanitize::register_secret(key);
    // SAFETY: set before any hook starts, in this test binary's only test.
    unsafe { std::env::set_var("LLM_CRED", key) };
    unsafe { std::env::set_var("DATABASE_URL", "postgres://app:hunter2hunter2@db/app") };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();

    let outside = origin.path().join("PWNED_BY_HOOK.txt");
    let git_dirs = [
        format!("'{}'", origin.path().join(".git").display()),
        format!("'{}'", trees.path().join("DEB-sandbox1.git").display()),
    ];
    let attack =
        support::escape_attempts(&outside, &git_dirs, "sk-sandbox-secret\\|hunter2", port, "");
    std::fs::write(tree.root.join("attack.sh"), attack).unwrap();
    // The same attack and the same normal test in each box: Landlock (what this kernel
    // gives), then bubblewrap as a kernel without Landlock would use it.
    let bubblewrap = moot::code::sandbox::bubblewrap()
        .expect("bubblewrap (`bwrap`) is installed by scripts/setup and can make its box here");
    let boxes = [
        ("landlock", Kernel::here()),
        (
            "bubblewrap",
            Kernel {
                landlock: None,
                bubblewrap: Some(bubblewrap),
            },
        ),
    ];
    for (expected, kernel) in boxes {
        let boxed = || Sandbox::prepare_on(&tree.root, Limits::default(), false, &kernel);
        let result = hooks::run_boxed(&hook("sh attack.sh".into()), &tree.root, boxed()).await;
        assert!(
            result
                .sandbox
                .as_deref()
                .is_some_and(|s| s.starts_with(expected)),
            "{result:?}"
        );
        assert!(result.offline, "{result:?}");
        assert_eq!(
            (result.passed, result.failed),
            (Some(7), Some(0)),
            "{expected}: {}",
            result.tail
        );
        assert!(result.ok(), "{}", result.tail);
        assert!(!outside.exists());
        for git_dir in [
            origin.path().join(".git"),
            trees.path().join("DEB-sandbox1.git"),
        ] {
            assert!(
                !git_dir.join("hooks/post-checkout").exists(),
                "{expected}: a git hook was planted in {}",
                git_dir.display()
            );
            let config = std::fs::read_to_string(git_dir.join("config")).unwrap();
            assert!(!config.contains("hooksPath"), "{expected}: {config}");
        }
        assert!(!result.tail.contains(key) && !result.tail.contains("hunter2"));

        // A normal test in the same sandbox: it writes its tree, HOME and TMPDIR, and passes.
        let normal = r#"p=0; f=0
if [ "$(sh calc.sh 2 3)" = 5 ]; then p=$((p+1)); else f=$((f+1)); fi
mkdir -p build && echo ok > build/out && p=$((p+1)) || f=$((f+1))
echo cached > "$HOME/.cache-file" && p=$((p+1)) || f=$((f+1))
t=$(mktemp) && echo x > "$t" && p=$((p+1)) || f=$((f+1))
echo "test result: ok. $p passed; $f failed"
[ $f -eq 0 ]
"#;
        std::fs::write(tree.root.join("normal.sh"), normal).unwrap();
        let result = hooks::run_boxed(&hook("sh normal.sh".into()), &tree.root, boxed()).await;
        assert_eq!(
            (result.passed, result.failed),
            (Some(4), Some(0)),
            "{expected}: {}",
            result.tail
        );
        assert!(result.ok() && result.sandbox.is_some(), "{result:?}");
        assert!(tree.root.join("build/out").exists());
        std::fs::remove_dir_all(tree.root.join("build")).unwrap();
    }
    drop(listener);
}
