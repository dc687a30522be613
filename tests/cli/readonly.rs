//! A journal whose directory is a read-only mount (in a user and mount namespace of the test's
//! own): reading commands read it as it stands and say so; a debate is refused with what to
//! do; nothing in it is lost.

use crate::*;

/// moot in `home` with its data directory remounted read-only, then `args`.
fn on_read_only_mount(home: &Home, server: Option<&StandIn>, args: &[&str]) -> Output {
    let data = home.path().join("moot-home");
    let mut command = home.prepared(Command::new("unshare"), server);
    command
        .args([
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            r#"mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@""#,
        ])
        .arg(&data)
        .arg(env!("CARGO_BIN_EXE_moot"))
        .args(args)
        .stdin(Stdio::null());
    command.output().unwrap()
}

#[test]
fn a_read_only_journal_is_read_as_it_stands_and_a_debate_is_refused_with_the_fix() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let output = home.run(
        Some(&server),
        &[
            "--headless",
            "--no-checkpoints",
            "--max-rounds",
            "1",
            QUESTION,
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let id = of_type(&events(&output), "debate_started")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let listed_before = home.run(None, &["list", "--json"]);

    // The namespace itself must work here, or the test says so and fails.
    let probe = on_read_only_mount(&home, None, &["--version"]);
    assert!(
        probe.status.success(),
        "this machine cannot make a user and mount namespace to test a read-only mount: {}",
        stderr(&probe)
    );

    let listed = on_read_only_mount(&home, None, &["list", "--json"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    assert_eq!(listed.stdout, listed_before.stdout, "the same list");
    assert!(
        stderr(&listed).contains("read-only file system, so the journal is read as it stands"),
        "{}",
        stderr(&listed)
    );
    for args in [
        vec!["show", id.as_str(), "--json"],
        vec!["search", "Redis"],
        vec!["audit", id.as_str(), "--verify"],
        vec!["gates", id.as_str()],
    ] {
        let output = on_read_only_mount(&home, None, &args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
    }

    let refused = on_read_only_mount(
        &home,
        Some(&server),
        &["--headless", "--no-checkpoints", QUESTION],
    );
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    let message = stderr(&refused);
    assert!(
        message.contains("is on a read-only file system")
            && message.contains("set MOOT_HOME to a writable directory"),
        "{message}"
    );
    assert!(
        !message.contains("unable to open database file"),
        "{message}"
    );

    // Nothing was lost, and the journal is writable again once the mount is gone.
    let after = home.run(None, &["audit", &id, "--verify"]);
    assert_eq!(after.status.code(), Some(0), "{}", stderr(&after));
    assert_eq!(
        home.run(None, &["list", "--json"]).stdout,
        listed_before.stdout
    );
}
