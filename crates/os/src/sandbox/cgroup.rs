//! A cgroup for one hook run, where the machine lets moot make one (as root, or in a delegated
//! hierarchy): a cap on its processes (`pids.max`) and on its memory in all, a count of the
//! forks and allocations the caps refused, and every process in it killed when the run ends,
//! whatever session or group it moved itself to. cgroup v2 where its root offers the
//! controllers, else the v1 `pids` (and `memory`) hierarchies.

use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Which cgroup interface holds the caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// One hook run's cgroup (one directory under v2; one per hierarchy under v1).
#[derive(Debug)]
pub struct Cgroup {
    version: Version,
    /// The directory holding the process cap (v2: the only one).
    pids: PathBuf,
    /// v1's memory directory, when that hierarchy could be used.
    memory: Option<PathBuf>,
    /// Each directory's `cgroup.procs`, open for the child to write itself into.
    procs: Vec<std::fs::File>,
}

/// Caps the cgroup is made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    pub processes: u32,
    pub memory_bytes: u64,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// This process's cgroups: (hierarchy id, controllers, path) for each line of
/// /proc/self/cgroup.
fn own_cgroups() -> Vec<(String, String, String)> {
    std::fs::read_to_string("/proc/self/cgroup")
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            Some((
                parts.next()?.to_string(),
                parts.next()?.to_string(),
                parts.next()?.to_string(),
            ))
        })
        .collect()
}

/// Where each cgroup file system is mounted: (type, mount point, super options).
fn cgroup_mounts() -> Vec<(String, PathBuf, String)> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let mount_point = before.split(' ').nth(4)?;
            let mut after = after.split(' ');
            let kind = after.next()?;
            let _source = after.next();
            let options = after.next().unwrap_or_default();
            kind.starts_with("cgroup")
                .then(|| (kind.to_string(), unescape(mount_point), options.to_string()))
        })
        .collect()
}

/// A mount point as mountinfo writes it (spaces and the like as octal escapes).
fn unescape(field: &str) -> PathBuf {
    let mut out = Vec::new();
    let bytes = field.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && let Ok(n) = u8::from_str_radix(&field[i + 1..i + 4], 8)
        {
            out.push(n);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(out))
}

/// A fresh directory name for this run, unique in this process and across processes.
fn fresh_name() -> String {
    format!(
        "moot-hook-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn write(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .write_all(text.as_bytes())
}

impl Cgroup {
    /// A new cgroup with `caps`, or None where no writable hierarchy offers a process cap.
    pub fn create(caps: Caps) -> Option<Cgroup> {
        let mounts = cgroup_mounts();
        Self::create_v2(&mounts, caps).or_else(|| Self::create_v1(&mounts, caps))
    }

    /// Under v2's root, when its root hands `pids` down (our own cgroup holds processes, so
    /// under the no-internal-process rule it cannot hand controllers to a child).
    fn create_v2(mounts: &[(String, PathBuf, String)], caps: Caps) -> Option<Cgroup> {
        let (_, root, _) = mounts.iter().find(|(kind, _, _)| kind == "cgroup2")?;
        let offered = std::fs::read_to_string(root.join("cgroup.subtree_control")).ok()?;
        let offered: Vec<&str> = offered.split_whitespace().collect();
        if !offered.contains(&"pids") {
            return None;
        }
        sweep(root);
        let dir = root.join(fresh_name());
        std::fs::create_dir(&dir).ok()?;
        let mut made = Cgroup {
            version: Version::V2,
            pids: dir.clone(),
            memory: None,
            procs: Vec::new(),
        };
        write(&dir.join("pids.max"), &caps.processes.to_string()).ok()?;
        if offered.contains(&"memory") {
            // A cap the kernel refuses (too small) leaves the per-process limit in force.
            let _ = write(&dir.join("memory.max"), &caps.memory_bytes.to_string());
            let _ = write(&dir.join("memory.swap.max"), "0");
        }
        made.procs.push(
            std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
                .ok()?,
        );
        Some(made)
    }

    /// Under v1's `pids` hierarchy (and `memory`, where it is there), below our own cgroup.
    fn create_v1(mounts: &[(String, PathBuf, String)], caps: Caps) -> Option<Cgroup> {
        let own = own_cgroups();
        let dir_of = |controller: &str| -> Option<PathBuf> {
            let (_, mount, _) = mounts.iter().find(|(kind, _, options)| {
                kind == "cgroup" && options.split(',').any(|o| o == controller)
            })?;
            let (_, _, path) = own
                .iter()
                .find(|(_, controllers, _)| controllers.split(',').any(|c| c == controller))?;
            Some(mount.join(path.trim_start_matches('/')))
        };
        let parent = dir_of("pids")?;
        sweep(&parent);
        let dir = parent.join(fresh_name());
        std::fs::create_dir(&dir).ok()?;
        let mut made = Cgroup {
            version: Version::V1,
            pids: dir.clone(),
            memory: None,
            procs: Vec::new(),
        };
        write(&dir.join("pids.max"), &caps.processes.to_string()).ok()?;
        made.procs.push(
            std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
                .ok()?,
        );
        if let Some(memory_parent) = dir_of("memory") {
            sweep(&memory_parent);
            let memory = memory_parent.join(dir.file_name()?);
            if std::fs::create_dir(&memory).is_ok() {
                made.memory = Some(memory.clone());
                let capped = write(
                    &memory.join("memory.limit_in_bytes"),
                    &caps.memory_bytes.to_string(),
                );
                let procs = std::fs::OpenOptions::new()
                    .write(true)
                    .open(memory.join("cgroup.procs"));
                if let (Ok(()), Ok(procs)) = (capped, procs) {
                    made.procs.push(procs);
                }
            }
        }
        Some(made)
    }

    /// The descriptors the child writes `0` to, between fork and exec, to enter the cgroup.
    pub fn entry_fds(&self) -> Vec<RawFd> {
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// Whether the memory cap is the cgroup's (in all), not only each process's.
    pub fn caps_memory(&self) -> bool {
        match self.version {
            Version::V2 => self.pids.join("memory.max").exists(),
            Version::V1 => self.procs.len() > 1,
        }
    }

    /// How many forks the process cap refused so far.
    pub fn refused_forks(&self) -> u64 {
        event(&self.pids.join("pids.events"), "max")
    }

    /// How many times the memory cap ended a process by the OOM killer so far.
    pub fn memory_kills(&self) -> u64 {
        match (self.version, &self.memory) {
            (Version::V2, _) => event(&self.pids.join("memory.events"), "oom_kill"),
            (Version::V1, Some(memory)) => event(&memory.join("memory.oom_control"), "oom_kill"),
            (Version::V1, None) => 0,
        }
    }

    /// The processes in the cgroup now.
    fn members(&self) -> Vec<i32> {
        std::fs::read_to_string(self.pids.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// Kills every process in the cgroup and waits (two seconds at most) until it is empty.
    /// Returns whether it emptied.
    pub fn kill_all(&self) -> bool {
        if self.version == Version::V2 {
            let _ = write(&self.pids.join("cgroup.kill"), "1");
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let members = self.members();
            if members.is_empty() {
                return true;
            }
            // v1 (or a kernel before cgroup.kill): one by one, again until none is left,
            // since a member may fork while it is signalled (the process cap bounds that).
            for pid in members {
                // SAFETY: kill(2) on a pid read from the cgroup; it touches no memory.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::yield_now();
        }
    }
}

/// The count after `key` in a flat-keyed cgroup file (`max 3`).
fn event(file: &Path, key: &str) -> u64 {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(' ')?;
            (name == key).then(|| value.trim().parse().ok()).flatten()
        })
        .unwrap_or(0)
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        self.procs.clear();
        if self.kill_all() {
            let _ = std::fs::remove_dir(&self.pids);
            if let Some(memory) = &self.memory {
                let _ = std::fs::remove_dir(memory);
            }
        }
    }
}

/// Removes empty cgroups that runs of a moot no longer alive left behind (a `kill -9`).
fn sweep(parent: &Path) {
    for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(pid) = name
            .strip_prefix("moot-hook-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            // Fails, harmlessly, while any process is still inside.
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_unescaped_and_events_read_by_key() {
        assert_eq!(unescape("/sys/fs/a\\040b"), PathBuf::from("/sys/fs/a b"));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pids.events");
        std::fs::write(&file, "max 3\n").unwrap();
        assert_eq!(event(&file, "max"), 3);
        std::fs::write(&file, "low 0\nhigh 0\nmax 0\noom 1\noom_kill 2\n").unwrap();
        assert_eq!(event(&file, "oom_kill"), 2);
        assert_eq!(event(&file, "missing"), 0);
    }
}
