//! The box a hook's command runs in, since the code it runs was written by a model. It holds
//! in every direction: writes go only to the work tree and a private temp dir; reads reach
//! only those, the system's directories and the toolchains (`reads`), never a home's secrets
//! or moot's data; no network, no Unix socket, no keyring; no signal to any process outside
//! the hook's own; every process the hook started ends with it; and its processes and memory
//! are capped. Two boxes build it: Landlock with namespaces of moot's own making (`child`),
//! or, where the kernel has no Landlock or no user namespaces, bubblewrap (`bwrap`) from
//! mounts. Processes are capped by a cgroup where one is writable (`cgroup`), else by a limit
//! inside the hook's user namespace, which does not bind root: root with no writable cgroup
//! gets no box, as a machine with neither box gets none, and hooks are refused with the remedy.

mod cgroup;
mod child;
pub mod reads;
mod seccomp;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};
use serde::{Deserialize, Serialize};
use std::io::{Seek, Write};
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

/// How much a hook run may take: processes (threads count) and memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Processes and threads alive at once.
    pub processes: u32,
    /// Memory in MiB: in all where a cgroup holds it, else for each process.
    pub memory_mb: u64,
}

impl Default for Limits {
    /// Room for a parallel build on this machine (64 tasks a core, at least 1,024), and half
    /// its memory (at least 1 GiB).
    fn default() -> Limits {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let total_mb = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|info| {
                info.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .map_or(4096, |kb| kb / 1024);
        Limits {
            processes: cores.saturating_mul(64).max(1024),
            memory_mb: (total_mb / 2).max(1024),
        }
    }
}

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

/// Whether moot can make a hook's namespaces here (an unprivileged user namespace with its
/// own network, PID and mount namespaces, a /dev/shm of its own): tried once, with `true`.
pub fn namespaces_work() -> bool {
    static WORK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WORK.get_or_init(|| {
        let mut command = std::process::Command::new("true");
        child::install(
            &mut command,
            child::Plan {
                namespaces: Some(child::Maps::own()),
                ..child::Plan::default()
            },
        );
        succeeds(&mut command)
    })
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

/// The namespaces bubblewrap makes for a hook, and no capability inside (run by root it
/// would keep them).
const BWRAP_NAMESPACES: &[&str] = &[
    "--cap-drop",
    "ALL",
    "--unshare-user",
    "--unshare-net",
    "--unshare-ipc",
    "--unshare-pid",
    "--unshare-uts",
    "--die-with-parent",
    "--new-session",
];

/// bubblewrap's program, when it is installed and can make its box here (it needs a user
/// namespace, or to be installed setuid).
pub fn bubblewrap() -> Option<PathBuf> {
    static FOUND: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            let program = on_path("bwrap")?;
            succeeds(
                std::process::Command::new(&program)
                    .args(["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"])
                    .args(BWRAP_NAMESPACES)
                    .args(["--", "true"]),
            )
            .then_some(program)
        })
        .clone()
}

/// What this machine offers to box a hook with.
#[derive(Debug, Clone, Default)]
pub struct Kernel {
    /// The Landlock ABI, where Landlock and the namespaces moot makes with it both work.
    pub landlock: Option<i64>,
    /// bubblewrap's program, if installed and working.
    pub bubblewrap: Option<PathBuf>,
}

/// The variable that chooses the box: `landlock` or `bubblewrap` (else the first this
/// machine offers).
pub const CHOICE: &str = "MOOT_SANDBOX";

impl Kernel {
    /// What this machine has (of the box `MOOT_SANDBOX` names, when it names one).
    pub fn here() -> Kernel {
        let chosen = std::env::var(CHOICE).unwrap_or_default();
        let landlock = || landlock_abi().filter(|_| namespaces_work());
        match chosen.as_str() {
            "landlock" => Kernel {
                landlock: landlock(),
                bubblewrap: None,
            },
            "bubblewrap" => Kernel {
                landlock: None,
                bubblewrap: bubblewrap(),
            },
            _ => {
                let landlock = landlock();
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
    /// Its caps as a phrase (`at most 1024 processes (cgroup), 4096 MiB in all`); None when
    /// nothing capped its processes.
    pub limits: Option<String>,
}

/// Which box confines the filesystem.
enum Filesystem {
    /// A Landlock ruleset the child restricts itself to, in namespaces moot makes, and the
    /// rules it adds once it has mounted its own /proc and /dev/shm.
    Landlock {
        abi: i64,
        ruleset: OwnedFd,
        late_rules: Vec<(std::ffi::CString, u64)>,
    },
    /// bubblewrap runs the command in a root of read-only mounts but for the tree and the
    /// temp dir, with the seccomp filter from this file and `prlimit` to cap processes.
    Bubblewrap {
        program: PathBuf,
        tree: PathBuf,
        reads: reads::Reads,
        seccomp: std::fs::File,
        prlimit: Option<PathBuf>,
    },
    /// None: `--unsandboxed-hooks` on a machine with neither.
    Open,
}

/// What holds a hook's processes to their cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProcessCap {
    Cgroup,
    /// `RLIMIT_NPROC` in the hook's own user namespace (it binds every user but root).
    UserLimit,
}

/// One hook run's box: its private temp dir (removed when dropped), what confines it, and its
/// cgroup (every process in it killed when dropped).
pub struct Sandbox {
    scratch: tempfile::TempDir,
    filesystem: Filesystem,
    /// Whether the child makes its own namespaces (the Landlock box, or an open one where
    /// they work).
    namespaces: bool,
    offline: bool,
    limits: Limits,
    process_cap: Option<ProcessCap>,
    cgroup: Option<cgroup::Cgroup>,
}

/// Why a hook could not be boxed, said to the person with what to do.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "hooks run model-written code, so moot runs them only in a sandbox, and this machine offers neither \
         Landlock with user namespaces (Linux 5.13 or later, with unprivileged user namespaces allowed) nor a \
         working bubblewrap; install bubblewrap (the `bwrap` program), or rerun with --unsandboxed-hooks to run \
         them without one (the record will say so)"
    )]
    NoBox,
    #[error(
        "hooks run model-written code, so moot caps how many processes they start, and running as root it \
         needs a cgroup it can make for that (a process limit does not bind root), but none is writable here; \
         run moot as an ordinary user, give it a writable cgroup hierarchy, or rerun with --unsandboxed-hooks \
         to run them uncapped (the record will say so)"
    )]
    NoProcessCap,
    #[error(
        "{CHOICE}={0:?} names no box moot has; set it to `landlock` or `bubblewrap`, or unset it to use the first this machine offers"
    )]
    UnknownChoice(String),
    #[error("cannot make the hook's private temp dir: {0}")]
    Scratch(#[source] std::io::Error),
    #[error("cannot build the hook's sandbox: {0}")]
    Ruleset(#[source] landlock::RulesetError),
    #[error("cannot build the hook's sandbox: the kernel enforces no Landlock rule")]
    NotEnforced,
}

/// Whether this process runs as root (whose processes no `RLIMIT_NPROC` binds).
fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

impl Sandbox {
    /// The box for a hook run in `tree` with `limits`: Landlock where the kernel has it (and
    /// user namespaces), else bubblewrap where it works, else refused unless `unsandboxed`
    /// (then only the environment, and the network and processes where namespaces work, are
    /// confined). With either box the flag only lets a run go uncapped where nothing can cap
    /// it.
    pub fn prepare(
        tree: &Path,
        limits: Limits,
        unsandboxed: bool,
    ) -> Result<Sandbox, SandboxError> {
        match std::env::var(CHOICE).as_deref() {
            Ok("" | "landlock" | "bubblewrap") | Err(_) => {}
            Ok(other) => return Err(SandboxError::UnknownChoice(other.to_string())),
        }
        Self::prepare_on(tree, limits, unsandboxed, &Kernel::here())
    }

    /// `prepare` with what the machine offers given: tests choose the box.
    pub fn prepare_on(
        tree: &Path,
        limits: Limits,
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
        let reads = reads::reads();
        let (filesystem, namespaces) = match (kernel.landlock, &kernel.bubblewrap) {
            (Some(abi), _) => {
                let ruleset = ruleset(tree, scratch.path(), &reads)?;
                (
                    Filesystem::Landlock {
                        abi,
                        ruleset,
                        late_rules: late_rules(),
                    },
                    true,
                )
            }
            (None, Some(program)) => {
                let mut seccomp =
                    tempfile::tempfile_in(scratch.path()).map_err(SandboxError::Scratch)?;
                seccomp
                    .write_all(&seccomp::bytes(&seccomp::filter()))
                    .and_then(|()| seccomp.rewind())
                    .map_err(SandboxError::Scratch)?;
                (
                    Filesystem::Bubblewrap {
                        program: program.clone(),
                        tree: tree.to_path_buf(),
                        reads,
                        seccomp,
                        prlimit: on_path("prlimit"),
                    },
                    false,
                )
            }
            (None, None) => (Filesystem::Open, namespaces_work()),
        };
        let cgroup = cgroup::Cgroup::create(cgroup::Caps {
            processes: limits.processes,
            memory_bytes: limits.memory_mb.saturating_mul(1024 * 1024),
        });
        // A process limit counts the user's processes in the hook's own user namespace only,
        // and binds every user but root.
        let user_limit_holds = !is_root()
            && match &filesystem {
                Filesystem::Bubblewrap { prlimit, .. } => prlimit.is_some(),
                _ => namespaces,
            };
        let process_cap = if cgroup.is_some() {
            Some(ProcessCap::Cgroup)
        } else if user_limit_holds {
            Some(ProcessCap::UserLimit)
        } else {
            None
        };
        if process_cap.is_none() && !unsandboxed {
            return Err(SandboxError::NoProcessCap);
        }
        // bubblewrap's own network namespace always cuts it off.
        let offline = namespaces || matches!(filesystem, Filesystem::Bubblewrap { .. });
        Ok(Sandbox {
            scratch,
            filesystem,
            namespaces,
            offline,
            limits,
            process_cap,
            cgroup,
        })
    }

    pub fn confinement(&self) -> Confinement {
        let memory = match &self.cgroup {
            Some(cgroup) if cgroup.caps_memory() => format!("{} MiB in all", self.limits.memory_mb),
            _ => format!("{} MiB a process", self.limits.memory_mb),
        };
        Confinement {
            filesystem: match &self.filesystem {
                Filesystem::Landlock { abi, .. } => Some(format!("landlock ABI {abi}")),
                Filesystem::Bubblewrap { .. } => Some("bubblewrap".into()),
                Filesystem::Open => None,
            },
            offline: self.offline,
            limits: self.process_cap.map(|cap| {
                let by = match cap {
                    ProcessCap::Cgroup => "cgroup",
                    ProcessCap::UserLimit => "user limit",
                };
                format!(
                    "at most {} processes ({by}), {memory}",
                    self.limits.processes
                )
            }),
        }
    }

    /// Whether its process cap is in force: a cgroup holds it, or a limit that binds this user.
    pub fn caps_processes(&self) -> bool {
        self.process_cap.is_some()
    }

    /// Why the box stopped the run, when a cap it watches was reached: a fork the process
    /// cap refused, or a process the memory cap ended.
    pub fn exceeded(&self) -> Option<String> {
        let cgroup = self.cgroup.as_ref()?;
        if cgroup.refused_forks() > 0 {
            return Some(format!(
                "stopped: it tried to run more than {} processes at once",
                self.limits.processes
            ));
        }
        if cgroup.memory_kills() > 0 {
            return Some(format!(
                "stopped: it used more than {} MiB of memory",
                self.limits.memory_mb
            ));
        }
        None
    }

    /// Whether `exceeded` can tell anything (only a cgroup counts what its caps refused).
    pub fn watches(&self) -> bool {
        self.cgroup.is_some()
    }

    /// Ends every process of the run that is still alive (its cgroup's, where it has one;
    /// the namespaces end theirs with the hook).
    pub fn end(&self) {
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill_all();
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

    /// The boxed command for shell command `line`: `sh -c line` in its environment, entering
    /// the box between fork and exec; or the same under bubblewrap.
    pub fn command(&self, line: &str) -> tokio::process::Command {
        let cgroup = self
            .cgroup
            .as_ref()
            .map(cgroup::Cgroup::entry_fds)
            .unwrap_or_default();
        let memory = Some(self.limits.memory_mb.saturating_mul(1024 * 1024));
        let processes = (self.process_cap == Some(ProcessCap::UserLimit))
            .then_some(u64::from(self.limits.processes));
        let (mut command, plan) = match &self.filesystem {
            Filesystem::Bubblewrap {
                program,
                tree,
                reads,
                seccomp,
                prlimit,
            } => {
                let mut command = std::process::Command::new(program);
                command.args(bubblewrap_args(tree, self.scratch.path(), reads));
                command
                    .arg("--seccomp")
                    .arg(seccomp.as_raw_fd().to_string());
                command.arg("--chdir").arg(tree).arg("--");
                // The process cap inside its user namespace, where it counts only the hook's
                // processes (set outside, it would count all of the person's).
                if let (Some(prlimit), Some(n)) = (prlimit, processes) {
                    command.arg(prlimit).arg(format!("--nproc={n}")).arg("--");
                }
                command.args(["sh", "-c", line]);
                let plan = child::Plan {
                    cgroup,
                    memory,
                    inherit: Some(seccomp.as_raw_fd()),
                    ..child::Plan::default()
                };
                (command, plan)
            }
            Filesystem::Landlock { .. } | Filesystem::Open => {
                let mut command = std::process::Command::new("sh");
                command.args(["-c", line]);
                let plan = child::Plan {
                    cgroup,
                    namespaces: self.namespaces.then(child::Maps::own),
                    processes: processes.filter(|_| self.namespaces),
                    memory,
                    seccomp: Some(seccomp::filter()),
                    landlock: match &self.filesystem {
                        Filesystem::Landlock { ruleset, .. } => Some(ruleset.as_raw_fd()),
                        _ => None,
                    },
                    late_rules: match &self.filesystem {
                        Filesystem::Landlock { late_rules, .. } => late_rules.clone(),
                        _ => Vec::new(),
                    },
                    inherit: None,
                };
                (command, plan)
            }
        };
        child::install(&mut command, plan);
        command.env_clear().envs(self.environment());
        command.into()
    }
}

/// Kills process group `pid` (a hook run's: its child starts a session of its own) with
/// SIGKILL.
pub fn kill_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        // SAFETY: kill(2) with a negative pid signals that process group; it touches no memory.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

/// bubblewrap's mounts: the readable directories read-only (their hidden parts covered), the
/// system's top-level links, its own /proc, /dev and /tmp, then the tree and the temp dir
/// writable.
fn bubblewrap_args(tree: &Path, scratch: &Path, reads: &reads::Reads) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = BWRAP_NAMESPACES.iter().map(Into::into).collect();
    let mut push = |parts: &[&std::ffi::OsStr]| args.extend(parts.iter().map(|p| p.into()));
    for readable in &reads.readable {
        let path = readable.path.as_os_str();
        push(&["--ro-bind".as_ref(), path, path]);
        for hidden in &readable.hidden {
            let hidden = hidden.as_os_str();
            if Path::new(hidden).is_dir() {
                push(&["--tmpfs".as_ref(), hidden, "--remount-ro".as_ref(), hidden]);
            } else {
                push(&["--ro-bind".as_ref(), "/dev/null".as_ref(), hidden]);
            }
        }
    }
    for (link, target) in &reads.links {
        push(&["--symlink".as_ref(), target.as_os_str(), link.as_os_str()]);
    }
    push(&[
        "--proc".as_ref(),
        "/proc".as_ref(),
        "--dev".as_ref(),
        "/dev".as_ref(),
    ]);
    // An empty /tmp (the tree and the temp dir are mounted into it when they live there),
    // read-only as the Landlock box has it: TMPDIR is the hook's own.
    push(&["--tmpfs".as_ref(), "/tmp".as_ref()]);
    for dir in [tree, scratch] {
        push(&["--bind".as_ref(), dir.as_os_str(), dir.as_os_str()]);
    }
    push(&["--remount-ro".as_ref(), "/tmp".as_ref()]);
    args
}

/// The Landlock ABI rules are written for: what the kernel has, up to what moot asks for.
fn rules_abi() -> ABI {
    let kernel = landlock_abi().map_or(ABI::Unsupported, |v| ABI::from(v as i32));
    kernel.min(ABI_WANTED)
}

/// The rules the child adds after its mounts: read its own /proc, write its own /dev/shm.
fn late_rules() -> Vec<(std::ffi::CString, u64)> {
    let abi = rules_abi();
    [
        (c"/proc", AccessFs::from_read(abi).bits()),
        (c"/dev/shm", AccessFs::from_all(abi).bits()),
    ]
    .into_iter()
    .map(|(path, access)| (path.to_owned(), access))
    .collect()
}

/// The ruleset: read and execute the readable directories (`reads`), write only beneath the
/// tree, the private temp dir, the null devices (and, added by the child, its own /proc to
/// read and /dev/shm to write); no TCP, and (ABI 6) no signal or abstract socket outside its
/// own domain.
fn ruleset(tree: &Path, scratch: &Path, reads: &reads::Reads) -> Result<OwnedFd, SandboxError> {
    let abi = ABI_WANTED;
    let read = AccessFs::from_read(abi);
    let readable = reads.allowed_paths();
    let existing = |paths: &[&str]| -> Vec<PathBuf> {
        paths
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.exists())
            .collect()
    };
    let writable = vec![tree.to_path_buf(), scratch.to_path_buf()];
    let devices = existing(&["/dev/null", "/dev/zero", "/dev/full"]);
    let random = existing(&["/dev/random", "/dev/urandom"]);
    let build = || -> Result<_, landlock::RulesetError> {
        Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(abi))?
            .handle_access(AccessNet::from_all(abi))?
            .scope(Scope::from_all(abi))?
            .create()?
            .add_rules(path_beneath_rules(readable, read))?
            .add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))?
            .add_rules(path_beneath_rules(devices, AccessFs::from_file(abi)))?
            .add_rules(path_beneath_rules(random, read))
    };
    let created = build().map_err(SandboxError::Ruleset)?;
    Option::<OwnedFd>::from(created).ok_or(SandboxError::NotEnforced)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without Landlock or bubblewrap a hook is refused, saying what to install or pass; with
    /// the flag it runs with only its environment (and what namespaces give) confined, and
    /// says it had no filesystem sandbox.
    #[test]
    fn without_a_box_hooks_are_refused_unless_the_person_says_otherwise() {
        let tree = tempfile::tempdir().unwrap();
        let bare = Kernel::default();
        let refused = Sandbox::prepare_on(tree.path(), Limits::default(), false, &bare)
            .err()
            .unwrap()
            .to_string();
        assert!(
            refused.contains("--unsandboxed-hooks") && refused.contains("install bubblewrap"),
            "{refused}"
        );
        let open = Sandbox::prepare_on(tree.path(), Limits::default(), true, &bare).unwrap();
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
        let sandbox =
            Sandbox::prepare_on(tree.path(), Limits::default(), true, &Kernel::default()).unwrap();
        let env = sandbox.environment();
        let names: Vec<&str> = env.iter().map(|(n, _)| n.as_str()).collect();
        assert!(names.contains(&"PATH"), "{names:?}");
        for gone in ["PYTHONPATH", "GOFLAGS", "SANDBOX_TEST_UNLISTED"] {
            assert!(!names.contains(&gone), "{gone} reached the hook: {names:?}");
        }
        // And what a boxed command itself sees, run for real (code hooks run this way).
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let seen = runtime
            .block_on(async { sandbox.command("env").output().await })
            .unwrap();
        let seen = String::from_utf8_lossy(&seen.stdout);
        assert!(seen.contains("PATH="), "{seen}");
        for secret in ["env-test-secret", "pw-in-url", "SANDBOX_TEST_UNLISTED"] {
            assert!(
                !seen.contains(secret),
                "{secret} reached the command: {seen}"
            );
        }
    }

    /// bubblewrap's root holds the readable directories read-only with the hidden parts
    /// covered, and only the tree and the temp dir writable.
    #[test]
    fn bubblewraps_mounts_follow_the_reads() {
        let reads = reads::Reads {
            readable: vec![reads::Readable {
                path: PathBuf::from("/etc"),
                hidden: vec![PathBuf::from("/etc/ssh"), PathBuf::from("/etc/shadow")],
            }],
            links: vec![(PathBuf::from("/bin"), PathBuf::from("usr/bin"))],
        };
        let args: Vec<String> =
            bubblewrap_args(Path::new("/w/tree"), Path::new("/t/scratch"), &reads)
                .iter()
                .map(|a| a.to_string_lossy().to_string())
                .collect();
        let line = args.join(" ");
        assert!(line.contains("--ro-bind /etc /etc"), "{line}");
        if Path::new("/etc/ssh").is_dir() {
            assert!(
                line.contains("--tmpfs /etc/ssh --remount-ro /etc/ssh"),
                "{line}"
            );
        }
        assert!(line.contains("--ro-bind /dev/null /etc/shadow"), "{line}");
        assert!(line.contains("--symlink usr/bin /bin"), "{line}");
        assert!(line.contains("--tmpfs /tmp"), "{line}");
        assert!(
            line.ends_with("--bind /w/tree /w/tree --bind /t/scratch /t/scratch --remount-ro /tmp"),
            "{line}"
        );
        assert!(!line.contains("--ro-bind / /"), "{line}");
        for namespace in BWRAP_NAMESPACES {
            assert!(line.contains(namespace), "{line}");
        }
    }
}
