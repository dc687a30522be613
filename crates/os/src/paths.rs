//! Where moot keeps things: data dir (MOOT_HOME or XDG data), config file (MOOT_CONFIG or XDG).

use std::path::PathBuf;

/// The data directory: `$MOOT_HOME`, else `$XDG_DATA_HOME/moot` (or the platform's data dir).
pub fn data_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("MOOT_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(home);
    }
    dirs::data_dir()
        .map(|d| d.join("moot"))
        .unwrap_or_else(|| PathBuf::from(".moot"))
}

/// The journal database file.
pub fn database_path() -> PathBuf {
    data_dir().join("moot.db")
}

/// The config file to read, and whether the user named it (a named file must exist).
pub fn config_path(flag: Option<PathBuf>) -> Option<(PathBuf, bool)> {
    if let Some(path) = flag {
        return Some((path, true));
    }
    if let Some(path) = std::env::var_os("MOOT_CONFIG").filter(|v| !v.is_empty()) {
        return Some((PathBuf::from(path), true));
    }
    if let Some(home) = std::env::var_os("MOOT_HOME").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(home).join("config.toml");
        if path.exists() {
            return Some((path, false));
        }
    }
    dirs::config_dir().map(|d| (d.join("moot").join("config.toml"), false))
}
