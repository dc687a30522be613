//! `moot serve` started by a test or a benchmark: its address read from the line it prints
//! first, and the server killed when dropped, so a failing test leaves none running.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

pub struct Serving {
    pub child: Child,
    /// `host:port`, as it printed it.
    pub addr: String,
}

impl Serving {
    /// Spawns `command` (a `moot serve --listen 127.0.0.1:0 …`) and waits for its address.
    pub fn start(command: &mut Command) -> Serving {
        let (child, first) = spawn_until_first_line(command);
        let addr = first
            .trim()
            .strip_prefix("moot serve: listening on http://")
            .unwrap_or_else(|| panic!("moot serve said {first:?}"))
            .to_string();
        Serving { child, addr }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// Spawns `command` with no input and its errors dropped, and reads the first line it prints
/// (the rest of its output is not read).
pub fn spawn_until_first_line(command: &mut Command) -> (Child, String) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    (child, first)
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
