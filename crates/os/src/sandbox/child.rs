//! What a hook's child does between fork and exec to enter its box: a session of its own (no
//! terminal to type into), the run's cgroup, a user namespace with the person's own ids, and
//! network, IPC, mount and PID namespaces; limits on processes and memory; then it forks once
//! more so that the hook runs as the first process of its PID namespace (when that process
//! ends, the kernel ends every process the hook started, `setsid` or not, and none can signal
//! a process outside), mounts a /proc and a /dev/shm of its own, and restricts itself with
//! the seccomp filter and the Landlock ruleset. Everything is prepared before the fork: the
//! child makes only async-signal-safe system calls.

use super::seccomp::Instruction;
use std::io::{Error, Result};
use std::os::fd::RawFd;

/// The ids the user namespace maps: the person's own, to themselves.
#[derive(Debug, Clone)]
pub struct Maps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl Maps {
    pub fn own() -> Maps {
        use std::os::unix::fs::MetadataExt;
        // /proc/self belongs to this process's effective ids.
        let (uid, gid) = std::fs::metadata("/proc/self")
            .map(|m| (m.uid(), m.gid()))
            .unwrap_or((0, 0));
        Maps {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }
}

/// Everything the child does, decided before the fork.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// `cgroup.procs` files to write itself into.
    pub cgroup: Vec<RawFd>,
    /// The namespaces and the run as PID 1, with these maps; None: neither.
    pub namespaces: Option<Maps>,
    /// `RLIMIT_NPROC`, set inside the user namespace (where it counts only the hook's own
    /// processes).
    pub processes: Option<u64>,
    /// `RLIMIT_DATA`, bytes.
    pub memory: Option<u64>,
    pub seccomp: Option<Vec<Instruction>>,
    /// A Landlock ruleset to restrict itself to.
    pub landlock: Option<RawFd>,
    /// Rules added to that ruleset once the child has mounted its own /proc and /dev/shm
    /// (a rule holds an inode, so one made before would name what the mounts cover): each
    /// path and the access it gets.
    pub late_rules: Vec<(std::ffi::CString, u64)>,
    /// Clear close-on-exec on this descriptor (bubblewrap reads the seccomp filter from it).
    pub inherit: Option<RawFd>,
}

/// Arranges for `command`'s child to carry out `plan`.
pub fn install(command: &mut std::process::Command, plan: Plan) {
    use std::os::unix::process::CommandExt;
    let run = move || -> Result<()> {
        // SAFETY: runs in the forked child before exec; `enter` makes only async-signal-safe
        // system calls on memory prepared before the fork, and allocates nothing.
        unsafe { enter(&plan) }
    };
    // SAFETY: see above.
    unsafe {
        command.pre_exec(run);
    }
}

/// Fails with the system's error when a call returned -1.
fn check(result: libc::c_int) -> Result<()> {
    if result == -1 {
        Err(Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Carries out `plan` in the child.
///
/// # Safety
/// Only between fork and exec.
unsafe fn enter(plan: &Plan) -> Result<()> {
    unsafe {
        // moot gone: so is the box (moot's own kill of the group covers a timeout).
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
        // Its own session: no controlling terminal, so nothing typed into moot's.
        check(libc::setsid())?;
        for fd in &plan.cgroup {
            if libc::write(*fd, b"0".as_ptr().cast(), 1) != 1 {
                return Err(Error::last_os_error());
            }
        }
        if let Some(fd) = plan.inherit {
            check(libc::fcntl(fd, libc::F_SETFD, 0))?;
        }
        set_limit(libc::RLIMIT_CORE, 0)?;
        if let Some(maps) = &plan.namespaces {
            check(libc::unshare(
                libc::CLONE_NEWUSER
                    | libc::CLONE_NEWNET
                    | libc::CLONE_NEWIPC
                    | libc::CLONE_NEWNS
                    | libc::CLONE_NEWPID,
            ))?;
            write_proc(c"/proc/self/setgroups", b"deny")?;
            write_proc(c"/proc/self/uid_map", &maps.uid_map)?;
            write_proc(c"/proc/self/gid_map", &maps.gid_map)?;
        }
        if let Some(processes) = plan.processes {
            set_limit(libc::RLIMIT_NPROC, processes)?;
        }
        if let Some(memory) = plan.memory {
            set_limit(libc::RLIMIT_DATA, memory)?;
        }
        if plan.namespaces.is_some() {
            become_pid_one()?;
            own_mounts()?;
            // Root of its user namespace until here; the hook itself holds no capability,
            // and running a program as uid 0 there gives it none.
            drop_capabilities()?;
        }
        if plan.seccomp.is_some() || plan.landlock.is_some() {
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        }
        if let Some(program) = &plan.seccomp {
            let fprog = libc::sock_fprog {
                len: program.len() as u16,
                filter: program.as_ptr() as *mut libc::sock_filter,
            };
            check(libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &fprog as *const libc::sock_fprog,
            ))?;
        }
        if let Some(fd) = plan.landlock {
            for (path, access) in &plan.late_rules {
                add_rule(fd, path, *access)?;
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                return Err(Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Sets a resource limit, soft and hard.
unsafe fn set_limit(resource: LimitResource, value: u64) -> Result<()> {
    let limit = libc::rlimit {
        rlim_cur: value as libc::rlim_t,
        rlim_max: value as libc::rlim_t,
    };
    // SAFETY: a plain struct on the stack.
    check(unsafe { libc::setrlimit(resource, &limit) })
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
type LimitResource = libc::__rlimit_resource_t;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
type LimitResource = libc::c_int;

/// Forks: the new child is PID 1 of the namespace made by `unshare` and returns to exec the
/// hook; this process stays outside it as a small parent that closes every descriptor it
/// holds (moot's pipes, std's exec-error pipe) but one, waits for the hook and exits as it
/// did. The one kept tells the child whether its parent still lives.
unsafe fn become_pid_one() -> Result<()> {
    unsafe {
        let mut alive = [0 as RawFd; 2];
        check(libc::pipe2(alive.as_mut_ptr(), libc::O_CLOEXEC))?;
        let pid = libc::fork();
        if pid < 0 {
            return Err(Error::last_os_error());
        }
        if pid > 0 {
            close_all_but(alive[1]);
            let mut status = 0;
            loop {
                let waited = libc::waitpid(pid, &mut status, 0);
                if waited == pid {
                    break;
                }
                if waited < 0 && Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    libc::_exit(127);
                }
            }
            let code = if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else if libc::WIFSIGNALED(status) {
                128 + libc::WTERMSIG(status)
            } else {
                127
            };
            libc::_exit(code);
        }
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
        libc::close(alive[1]);
        // A parent that died before the line above would leave this process unwatched: its
        // end of the pipe reads as closed then.
        let mut poll = libc::pollfd {
            fd: alive[0],
            events: libc::POLLIN,
            revents: 0,
        };
        if libc::poll(&mut poll, 1, 0) != 0 {
            libc::_exit(127);
        }
        libc::close(alive[0]);
    }
    Ok(())
}

/// Closes every descriptor but `keep`.
unsafe fn close_all_but(keep: RawFd) {
    unsafe {
        let keep = keep as libc::c_uint;
        let ranged = (keep == 0 || libc::syscall(libc::SYS_close_range, 0u32, keep - 1, 0u32) == 0)
            && libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32) == 0;
        if !ranged {
            // Before Linux 5.9: one by one, up to the usual limit.
            for fd in 0..4096 {
                if fd != keep as RawFd {
                    libc::close(fd);
                }
            }
        }
    }
}

/// In the new mount namespace: nothing propagates back, a /proc that shows only the hook's
/// own processes (where the kernel allows one; else the host's, whose processes' files the
/// Landlock domain still keeps it out of), and a /dev/shm of its own.
unsafe fn own_mounts() -> Result<()> {
    unsafe {
        check(libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ))?;
        let _ = libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        );
        let shm = libc::mount(
            c"tmpfs".as_ptr(),
            c"/dev/shm".as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            c"mode=1777".as_ptr().cast(),
        );
        // A machine without /dev/shm has none to share either (and no rule grants it).
        if shm != 0 && Error::last_os_error().raw_os_error() != Some(libc::ENOENT) {
            return Err(Error::last_os_error());
        }
    }
    Ok(())
}

/// `struct landlock_path_beneath_attr`.
#[repr(C, packed)]
struct PathBeneath {
    allowed_access: u64,
    parent_fd: i32,
}

/// `LANDLOCK_RULE_PATH_BENEATH`.
const RULE_PATH_BENEATH: libc::c_int = 1;

/// Adds a rule to ruleset `ruleset`: `access` beneath `path` (skipped where nothing is there).
unsafe fn add_rule(ruleset: RawFd, path: &std::ffi::CStr, access: u64) -> Result<()> {
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
        if fd < 0 {
            return Ok(());
        }
        let rule = PathBeneath {
            allowed_access: access,
            parent_fd: fd,
        };
        let added = libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            RULE_PATH_BENEATH,
            &rule as *const PathBeneath,
            0u32,
        );
        libc::close(fd);
        if added != 0 {
            return Err(Error::last_os_error());
        }
    }
    Ok(())
}

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapabilityHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`.
#[repr(C)]
#[derive(Clone, Copy)]
struct CapabilityData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
/// SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP and SECBIT_NO_CAP_AMBIENT_RAISE, each with its lock.
const SECURE_BITS: libc::c_ulong = 0b1100_1111;

/// Drops every capability for good: none effective, permitted or inheritable, the bounding
/// and ambient sets emptied, and uid 0 gaining none at exec.
unsafe fn drop_capabilities() -> Result<()> {
    unsafe {
        check(libc::prctl(libc::PR_SET_SECUREBITS, SECURE_BITS, 0, 0, 0))?;
        for capability in 0..64 {
            // Past the kernel's last capability this fails; nothing is left to drop there.
            if libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0) != 0 {
                break;
            }
        }
        check(libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        ))?;
        let header = CapabilityHeader {
            version: CAPABILITY_VERSION_3,
            pid: 0,
        };
        let none = [CapabilityData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capset, &header, none.as_ptr()) != 0 {
            return Err(Error::last_os_error());
        }
    }
    Ok(())
}

/// Writes `bytes` to a /proc file with raw system calls.
unsafe fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> Result<()> {
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(Error::last_os_error());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        if written != bytes.len() as isize {
            return Err(Error::last_os_error());
        }
    }
    Ok(())
}
