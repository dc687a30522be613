//! A real PostgreSQL server for the tests: `initdb` and `pg_ctl` into a temporary directory,
//! listening on a Unix socket in it and on no TCP port. PostgreSQL refuses to run as root, so
//! a root test process runs it as the unprivileged `postgres` user (Debian's package makes it).
//! `scripts/setup` installs the server; where its programs are missing the tests fail, unless
//! `MOOT_TEST_POSTGRES=skip` says to skip them, which each skipping test prints.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One running server; stopped (immediately) when dropped.
pub struct Postgres {
    /// The data directory and the socket's directory, both inside it.
    root: tempfile::TempDir,
    bin: PathBuf,
    /// Who runs the server's programs: `postgres` when the tests run as root.
    runs_as: Option<String>,
    databases: AtomicUsize,
}

/// Where the server's programs are: `MOOT_PG_BIN`, else the newest of Debian's
/// `/usr/lib/postgresql/N/bin`, else the directory on PATH that has them all.
fn binaries() -> Option<PathBuf> {
    const PROGRAMS: [&str; 3] = ["initdb", "pg_ctl", "createdb"];
    let complete = |dir: &Path| PROGRAMS.iter().all(|p| dir.join(p).is_file());
    if let Some(dir) = std::env::var_os("MOOT_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            complete(&bin).then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    std::env::var_os("PATH").and_then(|path| std::env::split_paths(&path).find(|dir| complete(dir)))
}

impl Postgres {
    /// A new server, or `None` when its programs are missing and `MOOT_TEST_POSTGRES=skip`
    /// (said on stderr, with why). Missing without that switch fails the test.
    pub fn start() -> Option<Postgres> {
        let Some(bin) = binaries() else {
            let why =
                "no PostgreSQL server programs (initdb, pg_ctl) here; scripts/setup installs them";
            if std::env::var("MOOT_TEST_POSTGRES").as_deref() == Ok("skip") {
                eprintln!("SKIPPED (MOOT_TEST_POSTGRES=skip): {why}");
                return None;
            }
            panic!("{why} (or set MOOT_TEST_POSTGRES=skip to skip the PostgreSQL tests)");
        };
        // PostgreSQL refuses root; `id` says who the tests run as.
        let root = Command::new("id")
            .arg("-u")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
            .unwrap_or(false);
        let runs_as = root.then(|| "postgres".to_string());
        // Short: a Unix socket's path has at most 107 bytes.
        let dir = tempfile::Builder::new()
            .prefix("moot-pg")
            .tempdir_in("/tmp")
            .expect("a temporary directory for PostgreSQL");
        let server = Postgres {
            root: dir,
            bin,
            runs_as,
            databases: AtomicUsize::new(0),
        };
        if let Some(user) = &server.runs_as {
            let chown = Command::new("chown")
                .arg(format!("{user}:"))
                .arg(server.root.path())
                .status()
                .expect("chown");
            assert!(
                chown.success(),
                "cannot hand {} to {user}",
                server.root.path().display()
            );
        }
        let data = server.data();
        server.run(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "moot",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ],
        );
        let options = format!(
            "-c listen_addresses='' -k {} -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
            server.root.path().display()
        );
        server.run(
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                "-l",
                server.root.path().join("log").to_str().unwrap(),
                "-o",
                &options,
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
        Some(server)
    }

    fn data(&self) -> PathBuf {
        self.root.path().join("data")
    }

    /// The directory its socket is in.
    pub fn socket_dir(&self) -> &Path {
        self.root.path()
    }

    /// Runs one of the server's programs as the server's user; panics with its output when it
    /// fails.
    fn run(&self, program: &str, args: &[&str]) {
        let path = self.bin.join(program);
        let mut command = match &self.runs_as {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(&path);
                command
            }
            None => Command::new(&path),
        };
        let output = command
            .args(args)
            .current_dir(self.root.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", path.display()));
        assert!(
            output.status.success(),
            "{program} {args:?} failed: {}{}\nlog: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            std::fs::read_to_string(self.root.path().join("log")).unwrap_or_default()
        );
    }

    /// Restarts the server (a fast shutdown: every connection is dropped), as an upgrade or
    /// a failover would.
    #[allow(
        dead_code,
        reason = "the journal's own tests restart it; the CLI's do not"
    )]
    pub fn restart(&self) {
        let data = self.data();
        self.run(
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                // Else the server writes to (and holds open) the output of `pg_ctl`.
                "-l",
                self.root.path().join("log").to_str().unwrap(),
                "-m",
                "fast",
                "-w",
                "-t",
                "60",
                "restart",
            ],
        );
    }

    /// A new, empty database on the server, as a `postgres://` URL that reaches it through
    /// the socket.
    pub fn database(&self) -> String {
        let name = format!("moot{}", self.databases.fetch_add(1, Ordering::SeqCst));
        self.run(
            "createdb",
            &[
                "-h",
                self.socket_dir().to_str().unwrap(),
                "-U",
                "moot",
                &name,
            ],
        );
        format!(
            "postgres://moot@/{name}?host={}",
            self.socket_dir().display()
        )
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.data();
        let path = self.bin.join("pg_ctl");
        let mut command = match &self.runs_as {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(&path);
                command
            }
            None => Command::new(&path),
        };
        let _ = command
            .args([
                "-D",
                data.to_str().unwrap(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ])
            .output();
    }
}
