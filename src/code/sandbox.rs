//! The box a hook's command runs in, since the code it runs was written by a model: Landlock
//! lets it write only its work tree and a private temp dir (read everywhere else), a new user
//! and network namespace cuts the network, and its environment is an allow-list holding no
//! value moot knows as a secret. On a kernel without Landlock, bubblewrap (`bwrap`), where
//! installed, builds the same box from mounts: everything read-only but the tree and the
//! temp dir, and no network.

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, path_beneath_rules,
};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The Landlock ABI this crate asks for; a kernel with less enforces what it has.
const ABI_WANTED: ABI = ABI::V6;

/// Variables a hook keeps from moot's environment, when their values hold no secret: what
/// finding and running a toolchain needs, nothing else.
const KEPT: &[&str] = &[
    "PATH",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "USER",
    "LOGNAME",
    "SHELL",
    "NO_COLOR",
    "CI",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "CARGO_HOME",
    "GOROOT",
    "GOPATH",
    "GOMODCACHE",
    "GOFLAGS",
    "JAVA_HOME",
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "PYTHONUSERBASE",
    "NODE_PATH",
];

/// The Landlock ABI the kernel offers, if any.
pub fn landlock_abi() -> Option<i64> {
    // SAFETY: landlock_create_ruleset with a null attribute, size 0 and the VERSION flag (1)
    // only returns the ABI version; it reads and writes no memory.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    (version >= 1).then_some(version)
}

/// Whether an unprivileged process here may make a user and network namespace.
fn can_cut_network() -> bool {
    static CAN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CAN.get_or_init(|| succeeds(std::process::Command::new("unshare").args(["-rn", "true"])))
}

/// Whether `command` runs and exits 0, its output thrown away (a probe of what works here).
fn succeeds(command: &mut std::process::Command) -> bool {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Where `program` is on the PATH, if it is.
pub fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// bubblewrap's program, when it is installed and can make its box here (it needs a user
/// namespace, or to be installed setuid).
pub fn bubblewrap() -> Option<PathBuf> {
    static FOUND: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            let program = on_path("bwrap")?;
            succeeds(
                std::process::Command::new(&program)
                    .args(["--ro-bind", "/", "/", "--unshare-user-try", "--unshare-net"])
                    .args(["--", "true"]),
            )
            .then_some(program)
        })
        .clone()
}

/// What this machine offers to box a hook with.
#[derive(Debug, Clone, Default)]
pub struct Kernel {
    /// The Landlock ABI, if the kernel has Landlock.
    pub landlock: Option<i64>,
    /// bubblewrap's program, if installed and working.
    pub bubblewrap: Option<PathBuf>,
}

impl Kernel {
    /// What this machine has.
    pub fn here() -> Kernel {
        let landlock = landlock_abi();
        Kernel {
            landlock,
            // Looked for only when it would be used.
            bubblewrap: if landlock.is_none() {
                bubblewrap()
            } else {
                None
            },
        }
    }
}

/// How a hook was confined, for its result and the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    /// `landlock ABI 7` or `bubblewrap`, or None when it ran unsandboxed
    /// (`--unsandboxed-hooks`).
    pub filesystem: Option<String>,
    /// Whether the network was cut off.
    pub offline: bool,
}

/// Which box confines the filesystem.
enum Filesystem {
    /// A Landlock ruleset the child restricts itself to.
    Landlock { abi: i64, ruleset: OwnedFd },
    /// bubblewrap runs the command, with read-only mounts but for the tree and the temp dir.
    Bubblewrap { program: PathBuf, tree: PathBuf },
    /// None: `--unsandboxed-hooks` on a machine with neither.
    Open,
}

/// One hook run's box: its private temp dir (removed when dropped) and what confines it.
pub struct Sandbox {
    scratch: tempfile::TempDir,
    filesystem: Filesystem,
    offline: bool,
}

/// Why a hook could not be boxed, said to the person with what to do.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "hooks run model-written code, so moot runs them only in a sandbox, and this kernel offers no Landlock \
         (Linux 5.13 or later, enabled at boot) and bubblewrap is not installed (or cannot make its box here); \
         install bubblewrap (the `bwrap` program), or rerun with --unsandboxed-hooks to run them without one \
         (the record will say so)"
    )]
    NoBox,
    #[error("cannot make the hook's private temp dir: {0}")]
    Scratch(#[source] std::io::Error),
    #[error("cannot build the hook's sandbox: {0}")]
    Ruleset(#[source] landlock::RulesetError),
    #[error("cannot build the hook's sandbox: the kernel enforces no Landlock rule")]
    NotEnforced,
}

impl Sandbox {
    /// The box for a hook run in `tree`: Landlock where the kernel has it, else bubblewrap
    /// where installed, else refused unless `unsandboxed` (then only the environment and the
    /// network are confined). With either box the flag changes nothing.
    pub fn prepare(tree: &Path, unsandboxed: bool) -> Result<Sandbox, SandboxError> {
        Self::prepare_on(tree, unsandboxed, &Kernel::here())
    }

    /// `prepare` with what the machine offers given: tests choose the box.
    pub fn prepare_on(
        tree: &Path,
        unsandboxed: bool,
        kernel: &Kernel,
    ) -> Result<Sandbox, SandboxError> {
        if kernel.landlock.is_none() && kernel.bubblewrap.is_none() && !unsandboxed {
            return Err(SandboxError::NoBox);
        }
        let scratch = tempfile::Builder::new()
            .prefix("moot-hook-")
            .tempdir()
            .map_err(SandboxError::Scratch)?;
        for dir in ["home", "cache", "tmp"] {
            std::fs::create_dir_all(scratch.path().join(dir)).map_err(SandboxError::Scratch)?;
        }
        let (filesystem, offline) = match (kernel.landlock, &kernel.bubblewrap) {
            (Some(abi), _) => {
                let ruleset = ruleset(tree, scratch.path())?;
                (Filesystem::Landlock { abi, ruleset }, can_cut_network())
            }
            // bubblewrap's own network namespace always cuts it off.
            (None, Some(program)) => (
                Filesystem::Bubblewrap {
                    program: program.clone(),
                    tree: tree.to_path_buf(),
                },
                true,
            ),
            (None, None) => (Filesystem::Open, can_cut_network()),
        };
        Ok(Sandbox {
            scratch,
            filesystem,
            offline,
        })
    }

    pub fn confinement(&self) -> Confinement {
        Confinement {
            filesystem: match &self.filesystem {
                Filesystem::Landlock { abi, .. } => Some(format!("landlock ABI {abi}")),
                Filesystem::Bubblewrap { .. } => Some("bubblewrap".into()),
                Filesystem::Open => None,
            },
            offline: self.offline,
        }
    }

    /// The private temp dir the hook's HOME, TMPDIR and caches point into.
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// The environment a hook gets: the allow-listed variables whose values carry no secret
    /// moot knows (keys, URL passwords), toolchain homes kept where HOME used to find them,
    /// and HOME, TMPDIR and the caches in the private temp dir.
    pub fn environment(&self) -> Vec<(String, String)> {
        // `redact` knows every key moot read (whatever variable held it) and URL passwords.
        let clean = |value: &str| crate::sanitize::redact(value) == value;
        let mut env: Vec<(String, String)> = std::env::vars()
            .filter(|(name, value)| {
                (KEPT.contains(&name.as_str()) || name.starts_with("LC_")) && clean(value)
            })
            .collect();
        let has = |env: &[(String, String)], name: &str| env.iter().any(|(n, _)| n == name);
        // Toolchains installed under the person's home are still found (read-only) once
        // HOME points elsewhere.
        if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
            for (name, under) in [
                ("RUSTUP_HOME", ".rustup"),
                ("CARGO_HOME", ".cargo"),
                ("GOPATH", "go"),
                ("PYTHONUSERBASE", ".local"),
            ] {
                let dir = home.join(under);
                if !has(&env, name) && dir.is_dir() {
                    env.push((name.into(), dir.display().to_string()));
                }
            }
        }
        let scratch = self.scratch.path();
        let at = |dir: &str| scratch.join(dir).display().to_string();
        for (name, value) in [
            ("HOME", at("home")),
            ("TMPDIR", at("tmp")),
            ("XDG_CACHE_HOME", at("cache")),
            ("GOCACHE", at("cache/go-build")),
            ("npm_config_cache", at("cache/npm")),
            ("PYTHONDONTWRITEBYTECODE", "1".into()),
        ] {
            env.retain(|(n, _)| n != name);
            env.push((name.into(), value));
        }
        env
    }

    /// The boxed command for shell command `line`: `sh -c line` in its environment and, in
    /// the child before it runs, the namespaces and the Landlock domain (which its children
    /// inherit and cannot leave); or the same under bubblewrap.
    pub fn command(&self, line: &str) -> tokio::process::Command {
        let mut command = match &self.filesystem {
            Filesystem::Bubblewrap { program, tree } => {
                let mut command = tokio::process::Command::new(program);
                let scratch = self.scratch.path();
                command
                    .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
                    .arg("--bind")
                    .args([tree, tree])
                    .arg("--bind")
                    .args([scratch, scratch])
                    .args(["--unshare-user-try", "--unshare-net", "--unshare-ipc"])
                    // Its own pid namespace and session: nothing outlives it, and nothing
                    // reaches the terminal moot runs in.
                    .args(["--unshare-pid", "--die-with-parent", "--new-session"])
                    .arg("--chdir")
                    .arg(tree)
                    .args(["--", "sh", "-c", line]);
                command
            }
            Filesystem::Landlock { .. } | Filesystem::Open => {
                let mut command = tokio::process::Command::new("sh");
                command.args(["-c", line]);
                self.confine(&mut command);
                command
            }
        };
        command.env_clear().envs(self.environment());
        command
    }

    /// Confines `command` between fork and exec: the namespaces and the Landlock domain.
    fn confine(&self, command: &mut tokio::process::Command) {
        let ruleset = match &self.filesystem {
            Filesystem::Landlock { ruleset, .. } => Some(ruleset.as_raw_fd()),
            _ => None,
        };
        let offline = self.offline;
        // Prepared before the fork: the child only reads them.
        // SAFETY: getuid and getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let uid_map = format!("{uid} {uid} 1\n").into_bytes();
        let gid_map = format!("{gid} {gid} 1\n").into_bytes();
        let closure = move || -> std::io::Result<()> {
            if offline {
                // SAFETY: in the forked child, which is single-threaded, as unshare with a
                // new user namespace requires.
                if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) } != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                write_proc(c"/proc/self/setgroups", b"deny")?;
                write_proc(c"/proc/self/uid_map", &uid_map)?;
                write_proc(c"/proc/self/gid_map", &gid_map)?;
            }
            if let Some(fd) = ruleset {
                // SAFETY: prctl and the Landlock syscall take plain integers.
                unsafe {
                    if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
            }
            Ok(())
        };
        // SAFETY: the closure runs between fork and exec and makes only async-signal-safe
        // system calls (unshare, open, write, close, prctl, syscall) on memory prepared
        // before the fork; it allocates nothing.
        unsafe {
            command.pre_exec(closure);
        }
    }
}

/// Writes `bytes` to a /proc file with raw system calls (safe between fork and exec).
fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> std::io::Result<()> {
    // SAFETY: open, write and close on a NUL-terminated path and a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        if written != bytes.len() as isize {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The ruleset: read and execute everywhere, write only beneath the tree and the private temp
/// dir (and the null devices), no TCP where the kernel can tell.
fn ruleset(tree: &Path, scratch: &Path) -> Result<OwnedFd, SandboxError> {
    let abi = ABI_WANTED;
    let read = AccessFs::from_read(abi);
    let devices: Vec<&str> = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"]
        .into_iter()
        .filter(|p| Path::new(p).exists())
        .collect();
    let build = || -> Result<_, landlock::RulesetError> {
        Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(abi))?
            .handle_access(AccessNet::from_all(abi))?
            .create()?
            .add_rules(path_beneath_rules(["/"], read))?
            .add_rules(path_beneath_rules([tree, scratch], AccessFs::from_all(abi)))?
            .add_rules(path_beneath_rules(devices, AccessFs::from_file(abi)))
    };
    let created = build().map_err(SandboxError::Ruleset)?;
    Option::<OwnedFd>::from(created).ok_or(SandboxError::NotEnforced)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without Landlock or bubblewrap a hook is refused, saying what to install or pass; with
    /// the flag it runs with only its environment and network confined, and says it had no
    /// filesystem sandbox.
    #[test]
    fn without_landlock_hooks_are_refused_unless_the_person_says_otherwise() {
        let tree = tempfile::tempdir().unwrap();
        let bare = Kernel::default();
        let refused = Sandbox::prepare_on(tree.path(), false, &bare)
            .err()
            .unwrap()
            .to_string();
        assert!(
            refused.contains("--unsandboxed-hooks") && refused.contains("install bubblewrap"),
            "{refused}"
        );
        let open = Sandbox::prepare_on(tree.path(), true, &bare).unwrap();
        assert_eq!(open.confinement().filesystem, None);
        assert!(open.environment().iter().any(|(name, value)| name == "HOME"
            && value.starts_with(&open.scratch().display().to_string())));
    }

    /// The environment is an allow-list: a variable of any name holding a registered key, or
    /// a URL with a password, is left out, and so is anything not on the list.
    #[test]
    fn the_environment_keeps_no_secret_whatever_its_name() {
        crate::sanitize::register_secret("sk-env-test-secret-abcdef0123456789");
        // SAFETY: test-only variables no other test reads.
        unsafe {
            std::env::set_var("PYTHONPATH", "sk-env-test-secret-abcdef0123456789");
            std::env::set_var("GOFLAGS", "-x postgres://u:pw-in-url@db/x");
            std::env::set_var("SANDBOX_TEST_UNLISTED", "plain");
        }
        let tree = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::prepare_on(tree.path(), true, &Kernel::default()).unwrap();
        let env = sandbox.environment();
        let names: Vec<&str> = env.iter().map(|(n, _)| n.as_str()).collect();
        assert!(names.contains(&"PATH"), "{names:?}");
        for gone in ["PYTHONPATH", "GOFLAGS", "SANDBOX_TEST_UNLISTED"] {
            assert!(!names.contains(&gone), "{gone} reached the hook: {names:?}");
        }
    }
}
