//! What a hook may read: the system's directories (less the host's own secrets) and the
//! toolchains it runs with, never a home directory itself, the secrets kept under one (keys,
//! clouds' credentials, browser profiles, `.config`), shared temp dirs, or moot's own data.
//! Both boxes take the same list: Landlock as rules, bubblewrap as read-only mounts.

use std::path::{Path, PathBuf};

/// The system's directories a toolchain runs from.
const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix", "/gnu",
    "/snap", "/sys",
];

/// Secrets inside the system's directories: password hashes, host keys, TLS keys, Wi-Fi and
/// VPN secrets. Unreadable to most users anyway; root's hooks must not read them either.
const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssh",
    "/etc/ssl/private",
    "/etc/pki/tls/private",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/NetworkManager/system-connections",
    "/etc/wpa_supplicant",
    "/etc/letsencrypt",
    "/etc/ipsec.secrets",
    "/etc/ipsec.d",
    "/etc/krb5.keytab",
    "/etc/credstore",
    "/etc/credstore.encrypted",
    "/etc/security/opasswd",
];

/// What a home directory keeps that no hook may read, relative to it. A toolchain directory
/// that holds one of these (`~/.cargo` holds `credentials.toml`) is narrowed to its parts.
const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".oci",
    ".config",
    ".cache",
    ".local/share",
    ".local/state",
    ".mozilla",
    ".thunderbird",
    ".docker",
    ".kube",
    ".password-store",
    ".pki",
    ".terraform.d",
    ".netrc",
    ".git-credentials",
    ".vault-token",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".cargo/config.toml",
    ".cargo/config",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
];

/// Toolchains installed under a home directory, relative to it.
const HOME_TOOLCHAINS: &[&str] = &[
    ".rustup",
    ".cargo/bin",
    ".cargo/registry",
    ".cargo/git",
    "go",
    ".pyenv",
    ".nvm",
    ".volta",
    ".bun",
    ".deno",
    ".sdkman/candidates",
    ".rbenv",
    ".local/bin",
    ".local/lib",
    ".m2/repository",
    ".gradle/caches",
    ".gradle/wrapper",
    ".dotnet",
    ".ghcup",
    ".elan",
    ".npm-global",
];

/// Directories shared with everything else on the machine: never readable whole (a
/// toolchain inside one still is).
const SHARED: &[&str] = &[
    "/tmp", "/var/tmp", "/run", "/var", "/dev", "/proc", "/media", "/mnt", "/srv", "/home",
];

/// A directory a hook may read and run programs from, and what inside it stays hidden.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readable {
    pub path: PathBuf,
    /// Files and directories inside `path` the hook may not read.
    pub hidden: Vec<PathBuf>,
}

/// Everything a hook may read, beyond its own tree and temp dir.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reads {
    pub readable: Vec<Readable>,
    /// Top-level links of the system (`/bin` → `usr/bin`), for a box that builds its own root.
    pub links: Vec<(PathBuf, PathBuf)>,
}

impl Reads {
    /// The paths to allow one by one, for a box that cannot hide a part of what it allows
    /// (Landlock): each readable directory, or, where something inside is hidden, its entries
    /// but the hidden ones (descending where a hidden path lies deeper).
    pub fn allowed_paths(&self) -> Vec<PathBuf> {
        let mut paths = Vec::new();
        for readable in &self.readable {
            spread(&readable.path, &readable.hidden, &mut paths);
        }
        paths
    }
}

/// `dir`, or its entries less `hidden`, into `out`.
fn spread(dir: &Path, hidden: &[PathBuf], out: &mut Vec<PathBuf>) {
    if !hidden.iter().any(|h| h.starts_with(dir)) {
        out.push(dir.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if hidden.contains(&path) {
            continue;
        }
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && hidden.iter().any(|h| h.starts_with(&path)) {
            spread(&path, hidden, out);
        } else if path.exists() {
            // A dangling link grants nothing and cannot be opened for a rule.
            out.push(path);
        }
    }
}

/// What moot never lets a hook read, beyond the homes' secrets: its own data, config and
/// models wherever the environment moves them (the defaults lie under a home's
/// `.local/share` and `.config`, secrets already).
pub fn moots_own() -> Vec<PathBuf> {
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let mut own: Vec<PathBuf> = ["MOOT_HOME", "MOOT_MODELS"]
        .into_iter()
        .filter_map(env)
        .collect();
    own.extend(env("XDG_DATA_HOME").map(|d| d.join("moot")));
    own.extend(env("XDG_CONFIG_HOME").map(|d| d.join("moot")));
    own.extend(env("MOOT_CONFIG").and_then(|c| c.parent().map(Path::to_path_buf)));
    own.retain(|dir| !dir.as_os_str().is_empty());
    own
}

/// The reads for this process's environment: its PATH, toolchain variables and home.
pub fn reads() -> Reads {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let mut homes: Vec<PathBuf> = env("HOME").map(PathBuf::from).into_iter().collect();
    homes.extend(account_home());
    let path: Vec<PathBuf> = env("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    let toolchains: Vec<(&str, PathBuf)> = [
        "RUSTUP_HOME",
        "CARGO_HOME",
        "GOROOT",
        "GOPATH",
        "JAVA_HOME",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "PYTHONUSERBASE",
    ]
    .into_iter()
    .filter_map(|name| env(name).map(|v| (name, PathBuf::from(v))))
    .collect();
    reads_for(&homes, &path, &toolchains, &moots_own())
}

/// The reads for homes `homes`, the directories of `path`, toolchain variables and moot's
/// own directories (`own`): what `reads` computes, with the environment given.
pub fn reads_for(
    homes: &[PathBuf],
    path: &[PathBuf],
    toolchains: &[(&str, PathBuf)],
    own: &[PathBuf],
) -> Reads {
    let real = |p: &Path| std::fs::canonicalize(p).ok();
    let homes: Vec<PathBuf> = homes.iter().filter_map(|h| real(h)).collect();
    let own: Vec<PathBuf> = own
        .iter()
        .map(|p| real(p).unwrap_or_else(|| p.clone()))
        .collect();
    // Secrets as they are named and as they resolve (a home may be reached through a link).
    let mut secrets: Vec<PathBuf> = homes
        .iter()
        .flat_map(|home| HOME_SECRETS.iter().map(move |s| home.join(s)))
        .collect();
    secrets.extend(own.iter().cloned());
    let mut never_above: Vec<PathBuf> = SHARED.iter().map(PathBuf::from).collect();
    never_above.extend(homes.iter().cloned());
    never_above.extend(own.iter().cloned());

    let mut candidates: Vec<PathBuf> = Vec::new();
    for dir in path {
        candidates.push(dir.clone());
        // A toolchain's `bin` (or pyenv's `shims`) runs what lies beside it.
        if dir
            .file_name()
            .is_some_and(|n| n == "bin" || n == "sbin" || n == "shims")
            && let Some(parent) = dir.parent()
        {
            candidates.push(parent.to_path_buf());
        }
    }
    for (name, dir) in toolchains {
        match *name {
            "CARGO_HOME" => {
                candidates.extend(["bin", "registry", "git"].map(|part| dir.join(part)));
            }
            "PYTHONUSERBASE" => candidates.extend(["bin", "lib"].map(|part| dir.join(part))),
            _ => candidates.push(dir.clone()),
        }
    }
    for home in &homes {
        candidates.extend(HOME_TOOLCHAINS.iter().map(|t| home.join(t)));
    }

    let allowed = |dir: &Path| {
        dir.is_dir()
            && !never_above.iter().any(|n| n.starts_with(dir))
            && !secrets
                .iter()
                .any(|s| s.starts_with(dir) || dir.starts_with(s))
    };
    let mut readable: Vec<Readable> = Vec::new();
    let mut links = Vec::new();
    for top in SYSTEM {
        let top = Path::new(top);
        let Ok(meta) = top.symlink_metadata() else {
            continue;
        };
        if meta.file_type().is_symlink() {
            if let Ok(target) = std::fs::read_link(top) {
                links.push((top.to_path_buf(), target));
            }
            continue;
        }
        let hidden = SYSTEM_SECRETS
            .iter()
            .map(PathBuf::from)
            .filter(|s| s.starts_with(top) && s.symlink_metadata().is_ok())
            .collect();
        readable.push(Readable {
            path: top.to_path_buf(),
            hidden,
        });
    }
    let mut extra: Vec<PathBuf> = candidates
        .iter()
        .filter_map(|c| real(c))
        .filter(|c| allowed(c))
        .collect();
    extra.sort();
    extra.dedup();
    for dir in extra {
        let covered = readable.iter().any(|r| dir.starts_with(&r.path));
        if !covered {
            readable.push(Readable {
                path: dir,
                hidden: Vec::new(),
            });
        }
    }
    Reads { readable, links }
}

/// The home directory the account database gives this process's user (HOME may say
/// another), read from /etc/passwd.
fn account_home() -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid().to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() >= 6 && fields[2] == uid).then(|| PathBuf::from(fields[5]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A home with secrets beside toolchains, and a PATH through it: the toolchains are read,
    /// the home, its secrets, `.cargo` whole (it holds credentials) and moot's data are not.
    #[test]
    fn toolchains_are_readable_and_a_homes_secrets_never() {
        let home = tempfile::tempdir().unwrap();
        let at = |p: &str| {
            let path = home.path().join(p);
            std::fs::create_dir_all(&path).unwrap();
            std::fs::canonicalize(path).unwrap()
        };
        let pyenv_shims = at(".pyenv/shims");
        at(".pyenv/versions/3.11/bin");
        let cargo_bin = at(".cargo/bin");
        at(".cargo/registry");
        std::fs::write(home.path().join(".cargo/credentials.toml"), "token").unwrap();
        at(".ssh");
        at(".config/gcloud");
        let local_bin = at(".local/bin");
        let data = at(".local/share/moot");
        let own_bin = at("bin");
        let reads = reads_for(
            &[home.path().to_path_buf()],
            &[
                pyenv_shims.clone(),
                cargo_bin.clone(),
                local_bin.clone(),
                own_bin.clone(),
            ],
            &[("CARGO_HOME", home.path().join(".cargo"))],
            &[data],
        );
        let allowed = reads.allowed_paths();
        let root = std::fs::canonicalize(home.path()).unwrap();
        for readable in [
            root.join(".pyenv"),
            cargo_bin,
            root.join(".cargo/registry"),
            local_bin,
            own_bin,
        ] {
            assert!(allowed.contains(&readable), "{readable:?} in {allowed:?}");
        }
        for hidden in [".ssh", ".config", ".cargo", ".local", ".local/share", ""] {
            let hidden = root.join(hidden);
            assert!(
                !allowed.iter().any(|a| hidden.starts_with(a)),
                "{hidden:?} is readable through {allowed:?}"
            );
        }
        assert!(!allowed.iter().any(|a| a == Path::new("/")));
    }

    /// The host's secrets inside /etc stay hidden while the rest of /etc is read.
    #[test]
    fn the_hosts_own_secrets_are_left_out_of_etc() {
        let reads = reads_for(&[], &[], &[], &[]);
        let etc = reads
            .readable
            .iter()
            .find(|r| r.path == Path::new("/etc"))
            .unwrap();
        assert!(
            etc.hidden.contains(&PathBuf::from("/etc/shadow")),
            "{etc:?}"
        );
        let allowed = reads.allowed_paths();
        assert!(allowed.contains(&PathBuf::from("/etc/passwd")));
        assert!(!allowed.contains(&PathBuf::from("/etc")));
        assert!(
            !allowed
                .iter()
                .any(|a| Path::new("/etc/shadow").starts_with(a)),
            "{allowed:?}"
        );
    }
}
