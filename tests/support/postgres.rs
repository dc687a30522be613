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
    /// The TCP port it also listens on, with TLS, when started `with_tls`.
    tls_port: Option<u16>,
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
        Postgres::start_with(false)
    }

    /// `start`, also listening on a TCP port of 127.0.0.1 that speaks TLS with a certificate
    /// for `localhost` made for it (`certificate()`), as a server on another host would.
    #[allow(dead_code, reason = "the journal's own tests use it; the CLI's do not")]
    pub fn with_tls() -> Option<Postgres> {
        Postgres::start_with(true)
    }

    fn start_with(tls: bool) -> Option<Postgres> {
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
            tls_port: tls.then(free_port),
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
        let mut options = format!(
            "-k {} -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
            server.root.path().display()
        );
        match server.tls_port {
            Some(port) => {
                server.make_certificate();
                options.push_str(&format!(
                    " -c listen_addresses=127.0.0.1 -p {port} -c ssl=on -c ssl_cert_file={0}/server.crt -c ssl_key_file={0}/server.key",
                    server.root.path().display()
                ));
            }
            None => options.push_str(" -c listen_addresses=''"),
        }
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

    /// A certificate authority of its own (`ca.crt`) and, signed by it, a certificate for
    /// `localhost` and its key, readable by the server alone.
    fn make_certificate(&self) {
        let dir = self.root.path();
        let openssl = |args: &[&str]| {
            let made = Command::new("openssl")
                .args(args)
                .current_dir(dir)
                .output()
                .expect("openssl (scripts/setup installs it)");
            assert!(
                made.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&made.stderr)
            );
        };
        let key = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        openssl(
            &[
                &["req", "-x509"][..],
                &key,
                &["-days", "2", "-subj", "/CN=moot test CA"],
            ]
            .concat()
            .iter()
            .copied()
            .chain(["-keyout", "ca.key", "-out", "ca.crt"])
            .collect::<Vec<_>>(),
        );
        openssl(
            &[
                &["req", "-x509", "-CA", "ca.crt", "-CAkey", "ca.key"][..],
                &key,
            ]
            .concat()
            .iter()
            .copied()
            .chain(["-days", "2", "-subj", "/CN=localhost"])
            .chain(["-addext", "subjectAltName=DNS:localhost"])
            .chain(["-addext", "basicConstraints=critical,CA:FALSE"])
            .chain(["-keyout", "server.key", "-out", "server.crt"])
            .collect::<Vec<_>>(),
        );
        for file in ["server.key", "server.crt"] {
            if let Some(user) = &self.runs_as {
                let _ = Command::new("chown")
                    .arg(format!("{user}:"))
                    .arg(dir.join(file))
                    .status();
            }
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            dir.join("server.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
    }

    /// The root the TLS port's certificate leads to.
    #[allow(dead_code, reason = "the journal's own tests use it; the CLI's do not")]
    pub fn certificate(&self) -> PathBuf {
        self.root.path().join("ca.crt")
    }

    /// A new, empty database, as a URL that reaches it over TCP at `host` (`localhost`, or
    /// `127.0.0.1`, which the certificate does not name) with `params` after the `?`.
    #[allow(dead_code, reason = "the journal's own tests use it; the CLI's do not")]
    pub fn database_over_tcp(&self, host: &str, params: &str) -> String {
        let port = self.tls_port.expect("a server started with_tls");
        let name = self.create_database();
        format!("postgres://moot@{host}:{port}/{name}?{params}")
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
        let output = self
            .program(program)
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

    /// One of the server's programs, to be run as the server's user.
    fn program(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        match &self.runs_as {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(&path);
                command
            }
            None => Command::new(&path),
        }
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

    /// The server's main process (its backends are its children).
    #[allow(dead_code, reason = "the bench reads its CPU time; the tests do not")]
    pub fn postmaster_pid(&self) -> u32 {
        std::fs::read_to_string(self.data().join("postmaster.pid"))
            .ok()
            .and_then(|text| text.lines().next()?.trim().parse().ok())
            .expect("the server's postmaster.pid")
    }

    /// A new, empty database on the server, as a `postgres://` URL that reaches it through
    /// the socket.
    pub fn database(&self) -> String {
        let name = self.create_database();
        format!(
            "postgres://moot@/{name}?host={}&port={}",
            self.socket_dir().display(),
            self.port()
        )
    }

    /// The port the server is known by (its socket is named for it): the default one, or the
    /// TLS server's.
    fn port(&self) -> u16 {
        self.tls_port.unwrap_or(5432)
    }

    /// A new, empty database on the server; its name.
    fn create_database(&self) -> String {
        let name = format!("moot{}", self.databases.fetch_add(1, Ordering::SeqCst));
        let port = self.port().to_string();
        self.run(
            "createdb",
            &[
                "-h",
                self.socket_dir().to_str().unwrap(),
                "-p",
                &port,
                "-U",
                "moot",
                &name,
            ],
        );
        name
    }
}

/// Kills (SIGKILL) `replica`, a `moot serve` on the journal at `url` that names itself `host`
/// (`MOOT_HOST`), and returns once the server has none of its connections left: a commit it
/// sent just before it died is the server's to make still, so what it left undone is known
/// only then. Its connections are told apart by their `application_name` (there must be some).
#[allow(
    dead_code,
    reason = "the replicas' tests and bench use it; the journal's do not"
)]
pub fn kill_replica(url: &str, replica: &mut std::process::Child, host: &str) {
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("a connection");
    let named = format!("moot {}@{host}", replica.id());
    let mut connections = || {
        client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                &[&named],
            )
            .expect("pg_stat_activity")
            .get::<_, i64>(0)
    };
    assert!(connections() > 0, "no connection is named {named:?}");
    replica.kill().expect("the replica killed");
    replica.wait().expect("the replica reaped");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while connections() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{named}'s connections outlived it"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A TCP port free on 127.0.0.1 a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free port")
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self
            .program("pg_ctl")
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
