//! Advisory locks on files moot owns (a debate's lease): `flock`, taken without waiting, so a
//! lock held by another process is said at once instead of waited on.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Takes `file`'s exclusive lock without waiting: `Ok(true)` when it is now held (until the
/// file is closed), `Ok(false)` when another open file holds it.
pub fn try_exclusive(file: &File) -> io::Result<bool> {
    // SAFETY: flock on a descriptor the caller's `File` owns for the whole call.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let error = io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(error)
    }
}

/// The kernel's clock ticks a second (`sysconf(_SC_CLK_TCK)`), which `/proc/PID/stat` counts a
/// process's start time in; `None` where the system does not say.
pub fn clock_ticks_per_second() -> Option<i64> {
    // SAFETY: sysconf reads a constant of the running system.
    let hertz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hertz > 0).then_some(hertz)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_is_held_once_until_its_file_closes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let first = File::create(&path).unwrap();
        assert!(try_exclusive(&first).unwrap());
        let second = File::open(&path).unwrap();
        assert!(!try_exclusive(&second).unwrap(), "held by the first");
        drop(first);
        assert!(try_exclusive(&second).unwrap());
        assert!(clock_ticks_per_second().is_some());
    }
}
