//! The journal kept to its owner: the data dir moot makes is 0700, the database and its WAL
//! and shared-memory files 0600, and the folders beside it (`leases/`, `versions/`, `live/`)
//! 0700. A wider mode found on what moot owns is narrowed, and said once.

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Folders beside the journal that hold what the journal's owner alone should read.
const BESIDE: &[&str] = &["leases", "versions", "live"];

/// Makes `dir` (and any missing parent) with mode 0700.
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

/// Narrows `path` to `mode` when others may read it now; says what it did.
fn narrow(path: &Path, mode: u32, what: &str) -> std::io::Result<Option<String>> {
    let Ok(meta) = path.symlink_metadata() else {
        return Ok(None);
    };
    // A link is never followed to narrow whatever it points at.
    if meta.file_type().is_symlink() {
        return Ok(None);
    }
    let had = meta.permissions().mode() & 0o777;
    if had & 0o077 == 0 {
        return Ok(None);
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    Ok(Some(format!(
        "{what} {} could be read by other users (mode {had:04o}); it is now {mode:04o}",
        path.display()
    )))
}

/// Readies the journal at `journal` to be opened privately: its directory made 0700 when
/// missing (and narrowed when it is moot's own data dir, `owned_dir`), the database file made
/// 0600 before SQLite makes it (its WAL and shared-memory files take the database's mode),
/// wider modes on the database, its WAL, shared-memory and the folders beside it narrowed.
/// Returns what was narrowed, for the person to hear.
pub fn prepare(journal: &Path, owned_dir: bool) -> std::io::Result<Vec<String>> {
    let mut said = Vec::new();
    // SQLite's name for a journal in memory: no file at all.
    if journal == Path::new(":memory:") {
        return Ok(said);
    }
    let dir = journal.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = dir {
        if dir.exists() {
            if owned_dir {
                said.extend(narrow(dir, 0o700, "moot's data dir")?);
            }
        } else {
            create_dir(dir)?;
        }
        for beside in BESIDE {
            said.extend(narrow(&dir.join(beside), 0o700, "the folder")?);
        }
    }
    if !journal.exists() {
        // Made empty and private: SQLite takes an empty file for a new database.
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(journal)
        {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
    }
    said.extend(narrow(journal, 0o600, "the journal")?);
    for suffix in ["-wal", "-shm"] {
        let mut name = journal.as_os_str().to_owned();
        name.push(suffix);
        said.extend(narrow(Path::new(&name), 0o600, "the journal's file")?);
    }
    Ok(said)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        path.metadata().unwrap().permissions().mode() & 0o777
    }

    /// A journal in memory is no file: nothing is made for it.
    #[test]
    fn a_journal_in_memory_makes_no_file() {
        let here = std::env::current_dir().unwrap();
        assert!(prepare(Path::new(":memory:"), false).unwrap().is_empty());
        assert!(!here.join(":memory:").exists());
    }

    /// A journal made where nothing was: the directory 0700, the file 0600, nothing said.
    #[test]
    fn a_new_journal_is_private_from_the_start() {
        let root = tempfile::tempdir().unwrap();
        let journal = root.path().join("made/moot.db");
        assert!(prepare(&journal, true).unwrap().is_empty());
        assert_eq!(mode(journal.parent().unwrap()), 0o700);
        assert_eq!(mode(&journal), 0o600);
    }

    /// An existing journal left readable by others is narrowed, with its WAL and leases, and
    /// each narrowing is said; a directory moot does not own is left as it is.
    #[test]
    fn a_journal_others_can_read_is_narrowed_and_said() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("data");
        std::fs::create_dir_all(dir.join("leases")).unwrap();
        let journal = dir.join("moot.db");
        for file in [&journal, &dir.join("moot.db-wal")] {
            std::fs::write(file, "").unwrap();
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        for folder in [&dir, &dir.join("leases")] {
            std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let said = prepare(&journal, false).unwrap();
        assert_eq!(mode(&dir), 0o755, "not moot's own data dir: left alone");
        let said = said.join("\n");
        assert_eq!(mode(&journal), 0o600, "{said}");
        assert_eq!(mode(&dir.join("moot.db-wal")), 0o600);
        assert_eq!(mode(&dir.join("leases")), 0o700);
        assert!(said.contains("(mode 0644); it is now 0600"), "{said}");
        let said = prepare(&journal, true).unwrap().join("\n");
        assert_eq!(mode(&dir), 0o700);
        assert!(said.contains("moot's data dir"), "{said}");
        assert!(prepare(&journal, true).unwrap().is_empty(), "said once");
    }
}
