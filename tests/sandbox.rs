//! A code debate's hooks run model-written code: in the debate's git work tree, a test that
//! tries to write outside it, plant a git hook in the repository it shares, read the key moot
//! read from an oddly named variable and open a socket fails at all four, while a normal test
//! passes in the same sandbox.

mod support;

use moot::code::hooks::{self, Hook};
use moot::code::worktree::WorkTree;
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
    let tree = WorkTree::create(
        origin.path(),
        trees.path(),
        &trees.path().join("DEB-sandbox1.git"),
        "DEB-sandbox1",
    )
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
    let result = hooks::run(&hook("sh attack.sh".into()), &tree.root).await;
    assert!(result.sandbox.is_some(), "{result:?}");
    assert_eq!(
        (result.passed, result.failed),
        (Some(7), Some(0)),
        "{}",
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
            "a git hook was planted in {}",
            git_dir.display()
        );
        let config = std::fs::read_to_string(git_dir.join("config")).unwrap();
        assert!(!config.contains("hooksPath"), "{config}");
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
    let result = hooks::run(&hook("sh normal.sh".into()), &tree.root).await;
    assert_eq!(
        (result.passed, result.failed),
        (Some(4), Some(0)),
        "{}",
        result.tail
    );
    assert!(result.ok() && result.sandbox.is_some(), "{result:?}");
    assert!(tree.root.join("build/out").exists());
    drop(listener);
}
