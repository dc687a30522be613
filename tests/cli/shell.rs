//! Shell completions and the manual page, generated from the parser: a bash script bash
//! accepts and that completes a command, the other shells' scripts, and a man page man renders.

use crate::*;

#[test]
fn completions_complete_a_command_and_the_man_page_renders() {
    let home = Home::new();
    let bash = home.run(None, &["completions", "bash"]);
    assert_eq!(bash.status.code(), Some(0), "{}", stderr(&bash));
    let script = home.path().join("moot.bash");
    std::fs::write(&script, &bash.stdout).unwrap();
    let checked = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    // What bash does on `moot sh<TAB>`: the completion function with the words so far.
    let completed = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {}; COMP_WORDS=(moot sh); COMP_CWORD=1; COMP_LINE='moot sh'; COMP_POINT=7; \
             _moot moot sh moot; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        ))
        .output()
        .unwrap();
    let offered = String::from_utf8_lossy(&completed.stdout);
    assert!(
        offered.lines().any(|l| l.trim() == "show"),
        "moot sh<TAB> offers: {offered:?} ({})",
        String::from_utf8_lossy(&completed.stderr)
    );
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let output = home.run(None, &["completions", shell]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{shell}: {}",
            stderr(&output)
        );
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("resume"),
            "{shell}: the commands are in it"
        );
    }
    let refused = home.run(None, &["completions", "tcsh"]);
    assert_eq!(refused.status.code(), Some(2));

    let man = home.run(None, &["man"]);
    assert_eq!(man.status.code(), Some(0), "{}", stderr(&man));
    let roff = String::from_utf8_lossy(&man.stdout).to_string();
    assert!(roff.contains(".TH moot"), "{roff}");
    // Rendered by man itself, which scripts/setup installs.
    let page = home.path().join("moot.1");
    std::fs::write(&page, &man.stdout).unwrap();
    let rendered = Command::new("man")
        .args(["-l", "-P", "cat"])
        .arg(&page)
        .env("MANWIDTH", "80")
        .output()
        .expect("man runs (scripts/setup installs it)");
    let text = String::from_utf8_lossy(&rendered.stdout);
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    assert!(
        text.contains("SUBCOMMANDS") || text.contains("moot-resume"),
        "{text}"
    );
}
