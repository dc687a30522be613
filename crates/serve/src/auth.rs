//! The API's bearer token: from MOOT_SERVE_TOKEN, a --token-file, or generated at first start
//! into the data directory (mode 0600); compared in constant time.

use super::ServeError;
use super::ServeOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The token, whether the person chose it, and where it was written when moot made it.
pub(super) struct Token {
    pub(super) value: String,
    pub(super) explicit: bool,
    pub(super) generated: Option<PathBuf>,
}

/// The shortest token moot takes.
const SHORTEST: usize = 16;

pub(super) fn token(args: &ServeOptions, data_dir: &Path) -> Result<Token, ServeError> {
    let chosen = |value: String, from: &str| {
        let value = value.trim().to_string();
        if value.chars().count() < SHORTEST {
            return Err(ServeError::Token(format!(
                "{from}: the token must be at least {SHORTEST} characters"
            )));
        }
        Ok(Token {
            value,
            explicit: true,
            generated: None,
        })
    };
    if let Ok(value) = std::env::var("MOOT_SERVE_TOKEN")
        && !value.trim().is_empty()
    {
        return chosen(value, "MOOT_SERVE_TOKEN");
    }
    if let Some(path) = &args.token_file {
        let value = std::fs::read_to_string(path).map_err(|e| {
            ServeError::Token(format!(
                "--token-file {}: cannot be read ({e})",
                path.display()
            ))
        })?;
        return chosen(value, &format!("--token-file {}", path.display()));
    }
    let path = data_dir.join("serve-token");
    if let Ok(value) = std::fs::read_to_string(&path)
        && value.trim().chars().count() >= SHORTEST
    {
        return Ok(Token {
            value: value.trim().to_string(),
            explicit: false,
            generated: Some(path),
        });
    }
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes)
        .map_err(|e| ServeError::Token(format!("cannot make a token: {e}")))?;
    let value: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    crate::store::private::create_dir(data_dir)
        .map_err(|e| ServeError::Token(format!("cannot make {}: {e}", data_dir.display())))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(&path)
        .map_err(|e| ServeError::Token(format!("cannot write {}: {e}", path.display())))?;
    file.write_all(format!("{value}\n").as_bytes())
        .map_err(|e| ServeError::Token(format!("cannot write {}: {e}", path.display())))?;
    Ok(Token {
        value,
        explicit: false,
        generated: Some(path),
    })
}

/// Whether `given` is the token, in time that does not depend on where they differ.
pub(super) fn matches(given: &str, token: &str) -> bool {
    let (a, b) = (given.as_bytes(), token.as_bytes());
    let mut differ = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        differ |= usize::from(x ^ y);
    }
    differ == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_token_itself_matches() {
        assert!(matches("0123456789abcdef", "0123456789abcdef"));
        assert!(!matches("0123456789abcdeF", "0123456789abcdef"));
        assert!(!matches("0123456789abcde", "0123456789abcdef"));
        assert!(!matches("", "0123456789abcdef"));
        assert!(!matches("0123456789abcdef0", "0123456789abcdef"));
    }
}
