//! Paths under a directory moot does not own (an arena directory others write into), opened
//! with no symlink anywhere below it: `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`
//! (or, on kernels before 5.6, an `O_NOFOLLOW` open of each component in turn), so a link
//! planted in place of a folder or a file cannot lead a read, a write or a delete outside.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// A directory held open; every path given to it is relative and resolved beneath it.
pub struct Beneath {
    root: OwnedFd,
    path: PathBuf,
}

fn cstring(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))
}

/// Whether this process may make entries in `dir` (write and search), as `access(2)` says,
/// without making one.
pub fn may_write_in(dir: &Path) -> io::Result<()> {
    let path = cstring(dir)?;
    // SAFETY: access(2) on a NUL-terminated path.
    check(unsafe { libc::access(path.as_ptr(), libc::W_OK | libc::X_OK) } as libc::c_long)
        .map(|_| ())
}

fn check(result: libc::c_long) -> io::Result<libc::c_long> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

/// `relative` as plain names: no root, no `..`, nothing empty.
fn names(relative: &Path) -> io::Result<Vec<&std::ffi::OsStr>> {
    relative
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} leaves its directory", relative.display()),
            )),
        })
        .collect()
}

impl Beneath {
    /// Holds `root` open (the person named it: links in its own path are theirs to make).
    pub fn open(root: &Path) -> io::Result<Beneath> {
        let file = File::open(root)?;
        if !file.metadata()?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a directory", root.display()),
            ));
        }
        Ok(Beneath {
            root: file.into(),
            path: root.to_path_buf(),
        })
    }

    /// Where `relative` is, for messages.
    pub fn display(&self, relative: &Path) -> PathBuf {
        self.path.join(relative)
    }

    /// Opens `relative` with `flags`, refusing any symlink on the way.
    fn at(&self, relative: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
        let parts = names(relative)?;
        let flags = flags | libc::O_CLOEXEC;
        let joined: PathBuf = if parts.is_empty() {
            PathBuf::from(".")
        } else {
            parts.iter().collect()
        };
        // SAFETY: open_how is plain integers, for which all zeroes is a valid value.
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = flags as u64;
        how.mode = u64::from(mode);
        how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS;
        let name = cstring(&joined)?;
        // SAFETY: openat2 reads the NUL-terminated path and the open_how of the size given.
        let result = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                self.root.as_raw_fd(),
                name.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        match check(result) {
            // SAFETY: a descriptor openat2 just returned, owned by no one else.
            Ok(fd) => Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) }),
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => self.walk(&parts, flags, mode),
            Err(e) => Err(e),
        }
    }

    /// `at` on kernels without openat2: each component opened with `O_NOFOLLOW`.
    fn walk(&self, parts: &[&std::ffi::OsStr], flags: i32, mode: u32) -> io::Result<OwnedFd> {
        // SAFETY: dup of a descriptor this holds.
        let mut dir = unsafe {
            OwnedFd::from_raw_fd(check(libc::dup(self.root.as_raw_fd()) as libc::c_long)? as RawFd)
        };
        let Some((last, through)) = parts.split_last() else {
            return Ok(dir);
        };
        for part in through {
            let name = cstring(Path::new(part))?;
            // SAFETY: openat on a live directory descriptor and a NUL-terminated name.
            let fd = check(unsafe {
                libc::openat(
                    dir.as_raw_fd(),
                    name.as_ptr(),
                    libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_RDONLY,
                )
            } as libc::c_long)?;
            // SAFETY: the descriptor openat just returned.
            dir = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        }
        let name = cstring(Path::new(last))?;
        // SAFETY: as above.
        let fd = check(unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                flags | libc::O_NOFOLLOW,
                mode as libc::c_uint,
            )
        } as libc::c_long)?;
        // SAFETY: the descriptor openat just returned.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
    }

    /// The directory holding `relative` (opened) and its last name.
    fn parent_of(&self, relative: &Path) -> io::Result<(OwnedFd, CString)> {
        let parts = names(relative)?;
        let Some((last, through)) = parts.split_last() else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no file named"));
        };
        let parent: PathBuf = through.iter().collect();
        let dir = self.at(&parent, libc::O_DIRECTORY | libc::O_RDONLY, 0)?;
        Ok((dir, cstring(Path::new(last))?))
    }

    /// Makes `relative` and the directories above it, each a real directory.
    pub fn create_dirs(&self, relative: &Path) -> io::Result<()> {
        let mut made = PathBuf::new();
        for part in names(relative)? {
            made.push(part);
            let (dir, name) = self.parent_of(&made)?;
            // SAFETY: mkdirat on a live directory descriptor and a NUL-terminated name.
            let result = unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o755) };
            if result != 0 {
                let error = io::Error::last_os_error();
                if error.kind() != io::ErrorKind::AlreadyExists {
                    return Err(error);
                }
            }
            // What is there must be a directory reached without a link.
            self.at(&made, libc::O_DIRECTORY | libc::O_RDONLY, 0)?;
        }
        Ok(())
    }

    /// The whole of a regular file, refused past `cap` bytes (`InvalidData`, naming both).
    pub fn read(&self, relative: &Path, cap: u64) -> io::Result<Vec<u8>> {
        // Non-blocking, so a FIFO left in the tree is refused below instead of hanging the open.
        let file = File::from(self.at(
            relative,
            libc::O_RDONLY | libc::O_NOCTTY | libc::O_NONBLOCK,
            0,
        )?);
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        if meta.len() > cap {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} bytes; at most {cap} are read", meta.len()),
            ));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(cap + 1).read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// The names in directory `relative` and whether each is a regular file (a link is not).
    pub fn list(&self, relative: &Path) -> io::Result<Vec<(String, bool)>> {
        let dir = self.at(relative, libc::O_DIRECTORY | libc::O_RDONLY, 0)?;
        // The open descriptor's own entry: the directory reached, not the path again.
        let listed = std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))?;
        Ok(listed
            .flatten()
            .map(|entry| {
                (
                    entry.file_name().to_string_lossy().into_owned(),
                    entry.file_type().is_ok_and(|t| t.is_file()),
                )
            })
            .collect())
    }

    /// Whether `relative` is a regular file reached without a link (a FIFO is not, and is
    /// not waited on).
    pub fn is_file(&self, relative: &Path) -> bool {
        self.at(
            relative,
            libc::O_RDONLY | libc::O_NOCTTY | libc::O_NONBLOCK,
            0,
        )
        .map(File::from)
        .and_then(|f| f.metadata())
        .is_ok_and(|m| m.is_file())
    }

    /// Writes `relative` whole: a new file beside it, synced, then renamed over it, so a
    /// reader sees the old file or the new one.
    pub fn write_atomic(&self, relative: &Path, bytes: &[u8]) -> io::Result<()> {
        let (dir, name) = self.parent_of(relative)?;
        let temp = CString::new(format!(
            ".{}.{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            unique()
        ))
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte"))?;
        // SAFETY: openat on a live directory descriptor and a NUL-terminated name.
        let fd = check(unsafe {
            libc::openat(
                dir.as_raw_fd(),
                temp.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o644 as libc::c_uint,
            )
        } as libc::c_long)?;
        // SAFETY: the descriptor openat just returned.
        let mut file = unsafe { File::from_raw_fd(fd as RawFd) };
        let written = file.write_all(bytes).and_then(|()| file.sync_all());
        // SAFETY: renameat/unlinkat within one live directory descriptor.
        let renamed = written.and_then(|()| {
            check(unsafe {
                libc::renameat(
                    dir.as_raw_fd(),
                    temp.as_ptr(),
                    dir.as_raw_fd(),
                    name.as_ptr(),
                )
            } as libc::c_long)
            .map(|_| ())
        });
        if renamed.is_err() {
            unsafe { libc::unlinkat(dir.as_raw_fd(), temp.as_ptr(), 0) };
        }
        renamed
    }

    /// Writes `relative` in place (created 0644 if new; an existing file keeps its mode).
    pub fn write(&self, relative: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut file = File::from(self.at(
            relative,
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_NOCTTY,
            0o644,
        )?);
        file.write_all(bytes)
    }

    /// Removes the file `relative` (a link there is removed itself, never followed).
    pub fn remove(&self, relative: &Path) -> io::Result<()> {
        let (dir, name) = self.parent_of(relative)?;
        // SAFETY: unlinkat on a live directory descriptor and a NUL-terminated name.
        check(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) } as libc::c_long)
            .map(|_| ())
    }

    /// Renames `from` to `to` in the same directory.
    pub fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (dir, old) = self.parent_of(from)?;
        let (_, new) = self.parent_of(to)?;
        // SAFETY: renameat within one live directory descriptor.
        check(unsafe {
            libc::renameat(dir.as_raw_fd(), old.as_ptr(), dir.as_raw_fd(), new.as_ptr())
        } as libc::c_long)
        .map(|_| ())
    }

    /// Opens (creating) a file to lock, reached without a link.
    pub fn lock_file(&self, relative: &Path) -> io::Result<File> {
        Ok(File::from(self.at(
            relative,
            libc::O_RDWR | libc::O_CREAT | libc::O_NOCTTY,
            0o644,
        )?))
    }
}

/// A number no other temp file of this process has used.
fn unique() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A file a fact cites, read again for the person to page through: `path` relative, read
/// beneath the debate's directory `root` with no symlink anywhere on the way, at most `cap`
/// bytes. The path came from gathering, but nothing swapped in since may lead outside.
pub fn read_cited(root: &Path, path: &str, cap: u64) -> Result<Vec<u8>, UnreadableCitation> {
    Beneath::open(root)
        .and_then(|tree| tree.read(Path::new(path), cap))
        .map_err(|source| match source.raw_os_error() {
            Some(libc::ELOOP) | Some(libc::EXDEV) => UnreadableCitation::LinkOnTheWay {
                root: root.to_path_buf(),
            },
            _ => UnreadableCitation::Io {
                root: root.to_path_buf(),
                source,
            },
        })
}

/// Why a cited file cannot be read again for the pager.
#[derive(Debug, thiserror::Error)]
pub enum UnreadableCitation {
    #[error("it is not a file under {} (a symlink is on its way)", root.display())]
    LinkOnTheWay { root: std::path::PathBuf },
    #[error("{source} (under {})", root.display())]
    Io {
        root: std::path::PathBuf,
        #[source]
        source: io::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO left where a file is expected (by a hook, or in an arena directory) is refused
    /// at once: opening it for reading would wait for a writer that never comes.
    #[test]
    fn a_fifo_is_refused_not_waited_on() {
        let root = tempfile::tempdir().unwrap();
        let fifo =
            std::ffi::CString::new(root.path().join("turn.json").to_string_lossy().as_bytes())
                .unwrap();
        // SAFETY: a valid C string and mode.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let tree = Beneath::open(root.path()).unwrap();
        let refused = tree.read(Path::new("turn.json"), 1024).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::InvalidInput, "{refused}");
        assert!(!tree.is_file(Path::new("turn.json")));
    }

    #[test]
    fn links_anywhere_below_are_refused_and_real_paths_work() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.json"), "{}").unwrap();
        let dir = Beneath::open(root.path()).unwrap();
        dir.create_dirs(Path::new("a/b")).unwrap();
        dir.write_atomic(Path::new("a/b/x.json"), b"{\"ok\":1}")
            .unwrap();
        assert_eq!(
            dir.read(Path::new("a/b/x.json"), 100).unwrap(),
            b"{\"ok\":1}"
        );
        assert!(
            dir.read(Path::new("a/b/x.json"), 3).is_err(),
            "past the cap"
        );
        assert_eq!(
            dir.list(Path::new("a/b")).unwrap(),
            vec![("x.json".to_string(), true)]
        );
        // A folder replaced by a link to somewhere else: nothing goes through it.
        std::os::unix::fs::symlink(outside.path(), root.path().join("t")).unwrap();
        assert!(dir.list(Path::new("t")).is_err());
        assert!(dir.read(Path::new("t/secret.json"), 100).is_err());
        assert!(dir.write_atomic(Path::new("t/new.json"), b"x").is_err());
        assert!(dir.remove(Path::new("t/secret.json")).is_err());
        assert!(dir.create_dirs(Path::new("t/deeper")).is_err());
        assert!(dir.lock_file(Path::new("t/lock")).is_err());
        assert!(outside.path().join("secret.json").exists());
        assert!(!outside.path().join("new.json").exists());
        // A file that is a link is not read, and a lock file that is one creates nothing.
        std::os::unix::fs::symlink(
            outside.path().join("secret.json"),
            root.path().join("f.json"),
        )
        .unwrap();
        assert!(dir.read(Path::new("f.json"), 100).is_err());
        std::os::unix::fs::symlink(outside.path().join("made"), root.path().join("m.lock"))
            .unwrap();
        assert!(dir.lock_file(Path::new("m.lock")).is_err());
        assert!(!outside.path().join("made").exists());
        assert!(dir.read(Path::new("../x"), 10).is_err());
        // Written in place, an existing file keeps its mode (a script stays executable).
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(root.path().join("run.sh"), "old").unwrap();
        std::fs::set_permissions(
            root.path().join("run.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        dir.write(Path::new("run.sh"), b"new").unwrap();
        let meta = std::fs::metadata(root.path().join("run.sh")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o755);
        assert!(dir.write(Path::new("t/x.sh"), b"x").is_err());
        // Removing a link removes the link, not what it points at.
        dir.remove(Path::new("f.json")).unwrap();
        assert!(outside.path().join("secret.json").exists());
    }
}
