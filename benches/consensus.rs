//! Consensus scaling (design note 004): a panel of 2 to 7 judges (the panel's range) deciding
//! among three options on the stand-in server answering each call after 100 ms, headless, as
//! `moot` runs; wall time and journaled turns per panel size. The judges speak side by side, so
//! the wall should grow far slower than the judges.
//! `cargo bench --bench consensus`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{Behaviour, StandIn};

const NAMES: [&str; 7] = [
    "Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf",
];

fn main() {
    let stand_in = StandIn::start_in_background(Behaviour {
        latency: Duration::from_millis(100),
        ..Behaviour::default()
    });
    let home = tempfile::tempdir().unwrap();
    let mut base = None;
    println!("judges · wall · turns · wall ÷ two judges'");
    for judges in 2..=7 {
        let mut config = String::from("[lessons]\nenabled = false\n\n");
        for name in &NAMES[..judges] {
            config.push_str(&format!(
                "[[panel.judges]]\nname = \"{name}\"\nstance = \"weighs the {name} concern\"\n\n"
            ));
        }
        let path = home.path().join(format!("config-{judges}.toml"));
        std::fs::write(&path, config).unwrap();
        let started = Instant::now();
        let output = Command::new(env!("CARGO_BIN_EXE_moot"))
            .current_dir(home.path())
            .env("MOOT_HOME", home.path().join(format!("home-{judges}")))
            .env("MOOT_CONFIG", &path)
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("OPENAI_BASE_URL", stand_in.openai_base())
            .args([
                "--headless",
                "--no-checkpoints",
                "--no-write",
                "--protocol",
                "panel",
                "--option",
                "A: Local-first sync",
                "--option",
                "B: Server-authoritative",
                "--option",
                "C: Manual export",
                "Which sync model should the app ship with?",
            ])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let wall = started.elapsed();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let turns = String::from_utf8_lossy(&output.stdout)
            .matches("\"type\":\"turn_completed\"")
            .count();
        let two = *base.get_or_insert(wall);
        println!(
            "{judges} · {:.2} s · {turns} · {:.2}",
            wall.as_secs_f64(),
            wall.as_secs_f64() / two.as_secs_f64()
        );
    }
}
