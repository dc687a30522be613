//! A child process on a pseudo-terminal, its screen kept by a VT100 emulator, for tests and
//! benchmarks that drive the real binary.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The real binary in a scratch home (its journal under `data/`, its `config.toml`), on a
/// terminal-like environment, talking to the OpenAI-compatible server at `base_url` if given.
pub fn moot(home: &std::path::Path, base_url: Option<&str>, args: &[&str]) -> Command {
    // Tests and benches know the binary; the stand-in example, which shares this file, does not.
    let mut command = Command::new(option_env!("CARGO_BIN_EXE_moot").unwrap_or("moot"));
    command
        .current_dir(home)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TERM", "xterm-256color")
        .env("MOOT_HOME", home.join("data"))
        .env("MOOT_CONFIG", home.join("config.toml"))
        // No Ollama and no pulled model: what a run falls back to stays the same everywhere.
        .env("OLLAMA_HOST", "127.0.0.1:9")
        .env("MOOT_MODELS", home.join("models"))
        .args(args);
    if let Some(base_url) = base_url {
        command.env("OPENAI_BASE_URL", base_url);
    }
    command
}

pub const ROWS: u16 = 40;
pub const COLS: u16 = 140;

/// A child process on a pseudo-terminal, its screen kept by a VT100 emulator.
pub struct Pty {
    child: Option<std::process::Child>,
    master: std::fs::File,
    screen: Arc<(Mutex<vt100::Parser>, Condvar)>,
    pub raw: Arc<Mutex<Vec<u8>>>,
}

impl Pty {
    pub fn spawn(command: &mut Command) -> Pty {
        let mut master: libc::c_int = -1;
        let mut slave: libc::c_int = -1;
        let size = libc::winsize {
            ws_row: ROWS,
            ws_col: COLS,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two descriptors we take ownership of.
        let status = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(status, 0, "openpty failed");
        // Neither end may outlive an exec: a child holding a master open (its own, or another
        // test's spawned meanwhile) never sees its terminal hang up when the test lets go, and
        // stays behind after the test (a stray `moot history` was found asleep on one).
        // SAFETY: fcntl on descriptors openpty just returned.
        unsafe {
            libc::fcntl(master, libc::F_SETFD, libc::FD_CLOEXEC);
            libc::fcntl(slave, libc::F_SETFD, libc::FD_CLOEXEC);
        }
        // SAFETY: the descriptors were just created and are owned here.
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let slave_fd = slave.as_raw_fd();
        command
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(move || {
                libc::setsid();
                libc::ioctl(slave_fd, libc::TIOCSCTTY as _, 0);
                Ok(())
            });
        }
        let child = command.spawn().unwrap();
        let master = std::fs::File::from(master);
        let screen = Arc::new((
            Mutex::new(vt100::Parser::new(ROWS, COLS, 0)),
            Condvar::new(),
        ));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().unwrap();
        let (screen_writer, raw_writer) = (screen.clone(), raw.clone());
        std::thread::spawn(move || {
            let mut buffer = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                raw_writer.lock().unwrap().extend_from_slice(&buffer[..n]);
                let (parser, changed) = &*screen_writer;
                parser.lock().unwrap().process(&buffer[..n]);
                changed.notify_all();
            }
        });
        Pty {
            child: Some(child),
            master,
            screen,
            raw,
        }
    }

    /// Everything the child has written so far, as text.
    #[allow(dead_code)]
    pub fn output(&self) -> String {
        String::from_utf8_lossy(&self.raw.lock().unwrap()).to_string()
    }

    pub fn press(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).unwrap();
        self.master.flush().unwrap();
    }

    /// Waits, woken by each batch of output, until the screen shows `text`; 30 s at most.
    pub fn wait_for(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        let (parser, changed) = &*self.screen;
        let mut guard = parser.lock().unwrap();
        loop {
            let contents = guard.screen().contents();
            if contents.contains(text) {
                return contents;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "the screen never showed {text:?}:\n{contents}"
            );
            guard = changed.wait_timeout(guard, left).unwrap().0;
        }
    }

    /// Waits until `check` holds for the screen's text; 30 s at most.
    pub fn wait_until(&self, check: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        let (parser, changed) = &*self.screen;
        let mut guard = parser.lock().unwrap();
        loop {
            let contents = guard.screen().contents();
            if check(&contents) {
                return contents;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "the screen never satisfied the check:\n{contents}"
            );
            guard = changed.wait_timeout(guard, left).unwrap().0;
        }
    }

    /// The terminal's settings as the child left them (the slave's, read through the master).
    #[allow(dead_code)]
    pub fn settings(&self) -> libc::termios {
        // SAFETY: tcgetattr fills a plain C struct, for which zeros are a valid start.
        unsafe {
            let mut settings: libc::termios = std::mem::zeroed();
            assert_eq!(libc::tcgetattr(self.master.as_raw_fd(), &mut settings), 0);
            settings
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    /// Waits for the child to exit, 30 s at most.
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("the child is still ours");
        let (done, exited) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(child.wait());
        });
        exited
            .recv_timeout(Duration::from_secs(30))
            .expect("the child exits")
            .unwrap()
    }

    /// Bytes the child has written so far.
    pub fn written(&self) -> usize {
        self.raw.lock().unwrap().len()
    }
}

impl Drop for Pty {
    /// A test that failed half-way leaves no process behind.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Where `output` entered the alternate screen (the first time) and left it (the last time).
#[allow(dead_code)]
pub fn alternate_screen(output: &str) -> (Option<usize>, Option<usize>) {
    (output.find("\u{1b}[?1049h"), output.rfind("\u{1b}[?1049l"))
}

/// CPU time a process has used, from /proc (for the benches' CPU shares).
#[allow(dead_code)]
pub fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: u64 = fields.get(11).and_then(|u| u.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|s| s.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis(ticks * 1000 / per_second)
}
