//! What the box adds to a hook run: `sh -c true` through `hooks::run` (private temp dir, the
//! readable list, Landlock ruleset, user, network, IPC, mount and PID namespaces with the hook
//! as PID 1 and its own /proc, seccomp filter, capabilities dropped, a cgroup where one is
//! writable, allow-listed environment), and through bubblewrap as a kernel without Landlock
//! runs it, against the same command spawned plainly. Target: at most 50 ms more.
//! `cargo bench --bench hooks`.

use moot::code::hooks::{self, Hook};
use std::process::Stdio;
use std::time::Duration;

fn main() {
    divan::main();
}

/// `sh -c true` as a hook.
fn true_hook() -> Hook {
    Hook {
        name: "test".into(),
        command: "true".into(),
        timeout: Duration::from_secs(30),
        output_cap: 4096,
        unsandboxed: false,
        limits: moot::code::sandbox::Limits::default(),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[divan::bench(sample_count = 100)]
fn sandboxed(bencher: divan::Bencher) {
    let tree = tempfile::tempdir().unwrap();
    let hook = true_hook();
    let runtime = runtime();
    bencher.bench_local(|| {
        let result = runtime.block_on(hooks::run(&hook, tree.path()));
        assert!(result.ok() && result.sandbox.is_some(), "{result:?}");
    });
}

#[divan::bench(sample_count = 100)]
fn bubblewrapped(bencher: divan::Bencher) {
    use moot::code::sandbox::{Kernel, Sandbox, bubblewrap};
    let Some(program) = bubblewrap() else {
        eprintln!("bubblewrap is not installed (scripts/setup installs it): skipped");
        return;
    };
    let tree = tempfile::tempdir().unwrap();
    let hook = true_hook();
    let kernel = Kernel {
        landlock: None,
        bubblewrap: Some(program),
    };
    let runtime = runtime();
    bencher.bench_local(|| {
        let boxed = Sandbox::prepare_on(
            tree.path(),
            moot::code::sandbox::Limits::default(),
            false,
            &kernel,
        );
        let result = runtime.block_on(hooks::run_boxed(&hook, tree.path(), boxed));
        assert_eq!(result.sandbox.as_deref(), Some("bubblewrap"), "{result:?}");
        assert!(result.ok(), "{result:?}");
    });
}

#[divan::bench(sample_count = 100)]
fn plain(bencher: divan::Bencher) {
    let tree = tempfile::tempdir().unwrap();
    let runtime = runtime();
    bencher.bench_local(|| {
        let status = runtime.block_on(async {
            tokio::process::Command::new("sh")
                .args(["-c", "true"])
                .current_dir(tree.path())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .status()
                .await
        });
        assert!(status.unwrap().success());
    });
}
