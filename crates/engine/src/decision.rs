//! Writing the decision record (docs/decisions/YYYY-MM-DD-<slug>.md) and its follow-up issue
//! draft. File names come from the date and the user's question, never from model output.

use crate::debate::RECEIPT_MARK;
use crate::sanitize;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// A filesystem-safe slug of at most 60 characters: lowercase ASCII letters, digits, hyphens.
/// It is made from the sanitized text, so an escape sequence in a question leaves no remnant
/// (`0-pwnedq-2j`) in a file name.
pub fn slug(text: &str) -> String {
    let mut slug = String::new();
    for c in sanitize::clean(text).chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
        if slug.len() >= 60 {
            break;
        }
    }
    let slug = slug.trim_matches('-').to_string();
    if slug.is_empty() {
        "debate".to_string()
    } else {
        slug
    }
}

/// Creates `dir/name.md`, or `name-2.md`, `name-3.md`… if taken: never overwrites.
fn create_new(dir: &Path, name: &str, contents: &str) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    for n in 1..1000 {
        let file = if n == 1 {
            format!("{name}.md")
        } else {
            format!("{name}-{n}.md")
        };
        let path = dir.join(file);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut handle) => {
                handle.write_all(contents.as_bytes())?;
                handle.sync_all()?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!(
            "too many decision records named {name} in {}",
            dir.display()
        ),
    ))
}

/// Writes the decision record `DATE-<slug of the question>.md`; the markdown is sanitized of
/// terminal escapes first.
pub fn write_record(
    dir: &Path,
    date: &str,
    question: &str,
    markdown: &str,
) -> std::io::Result<PathBuf> {
    write_named(dir, date, question, "", markdown)
}

/// Writes a decided record over `earlier`, the file moot wrote from `earlier_markdown`, when
/// that file still reads exactly as moot wrote it; otherwise (edited, moved, gone) the earlier
/// file is left alone and the record is written beside it as a new file. Returns where it went.
pub fn rewrite_record(
    earlier: &Path,
    earlier_markdown: &str,
    dir: &Path,
    date: &str,
    question: &str,
    markdown: &str,
) -> std::io::Result<PathBuf> {
    let untouched = std::fs::read_to_string(earlier)
        .is_ok_and(|on_disk| on_disk == sanitize::clean(earlier_markdown));
    if !untouched {
        return write_record(dir, date, question, markdown);
    }
    // Written beside it and renamed over it, so a crash leaves the old record or the new one.
    let folder = earlier.parent().unwrap_or(Path::new("."));
    let mut staged = tempfile::Builder::new()
        .prefix(".moot-record")
        .tempfile_in(folder)?;
    staged.write_all(sanitize::clean(markdown).as_bytes())?;
    staged.as_file().sync_all()?;
    let permissions = std::fs::metadata(earlier)?.permissions();
    staged
        .persist(earlier)
        .map_err(|e| e.error)?
        .set_permissions(permissions)?;
    Ok(earlier.to_path_buf())
}

/// What anchors a decision record in its journal: the debate and its chain head (position and
/// hash) over every row written before the record. A copy of the record kept elsewhere can
/// be checked against the journal with it (`moot audit ID --verify-record FILE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub debate: String,
    pub entry: i64,
    pub hash: String,
}

/// The record's closing section: the uniform result line (every protocol's winner, method,
/// confidence, consensus score, who started it) and the receipt, each when there is one.
pub fn closing_section(result: Option<&str>, receipt: Option<&Receipt>) -> String {
    let parts: Vec<String> = result
        .map(str::to_string)
        .into_iter()
        .chain(receipt.map(Receipt::line))
        .collect();
    if parts.is_empty() {
        return String::new();
    }
    format!("\n\n---\n\n{}\n", parts.join("\n\n"))
}

impl Receipt {
    /// The record's closing section that carries the receipt.
    pub fn section(&self) -> String {
        closing_section(None, Some(self))
    }

    /// The receipt as its line of the closing section.
    pub fn line(&self) -> String {
        format!(
            "{RECEIPT_MARK} moot debate `{}`, chain entry {}, `sha256:{}`. Check this file \
             against the journal with `moot audit {} --verify-record FILE`.",
            self.debate, self.entry, self.hash, self.debate
        )
    }

    /// The receipt a record carries, if it has one.
    pub fn read(markdown: &str) -> Option<Receipt> {
        let line = markdown
            .lines()
            .rev()
            .find(|line| line.starts_with(RECEIPT_MARK))?;
        let debate = line.split('`').nth(1)?.to_string();
        let entry = line
            .split("chain entry ")
            .nth(1)?
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()?;
        let hash: String = line
            .split("sha256:")
            .nth(1)?
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .collect();
        (hash.len() == 64).then_some(Receipt {
            debate,
            entry,
            hash,
        })
    }
}

/// A record without its closing section (the result line, the receipt): what the protocol
/// itself wrote.
pub fn without_receipt(markdown: &str) -> &str {
    [crate::debate::RESULT_MARK, RECEIPT_MARK]
        .iter()
        .find_map(|mark| markdown.rfind(&format!("\n\n---\n\n{mark}")))
        .map_or(markdown, |at| &markdown[..at])
}

/// Writes `DATE-<slug of the question><suffix>.md` in `dir`, sanitized, never overwriting.
fn write_named(
    dir: &Path,
    date: &str,
    question: &str,
    suffix: &str,
    markdown: &str,
) -> std::io::Result<PathBuf> {
    create_new(
        dir,
        &format!("{date}-{}{suffix}", slug(question)),
        &sanitize::clean(markdown),
    )
}

/// Writes a follow-up issue draft `DATE-<slug>-issue.md` beside the record.
pub fn write_follow_up(
    dir: &Path,
    date: &str,
    question: &str,
    markdown: &str,
) -> std::io::Result<PathBuf> {
    write_named(dir, date, question, "-issue", markdown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receipt_is_written_read_back_and_set_aside() {
        let receipt = Receipt {
            debate: "DEB-abc123".into(),
            entry: 57,
            hash: "ab".repeat(32),
        };
        let record = format!("# Decision\n\nUse Redis.{}", receipt.section());
        assert_eq!(Receipt::read(&record), Some(receipt));
        assert_eq!(without_receipt(&record), "# Decision\n\nUse Redis.");
        assert_eq!(without_receipt("# No receipt"), "# No receipt");
        assert_eq!(Receipt::read("# No receipt"), None);
    }

    #[test]
    fn slugs_are_safe_and_bounded() {
        assert_eq!(
            slug("Should we use Redis or PostgreSQL for caching?"),
            "should-we-use-redis-or-postgresql-for-caching"
        );
        assert_eq!(slug("../../etc/passwd"), "etc-passwd");
        assert_eq!(slug("???"), "debate");
        assert_eq!(
            slug("Cache\u{1b}]0;pwned\u{7} in Redis?\u{1b}[2J"),
            "cache-in-redis"
        );
        assert!(slug(&"x".repeat(500)).len() <= 60);
    }

    #[test]
    fn existing_records_are_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let first = create_new(dir.path(), "2026-01-01-q", "one").unwrap();
        let second = create_new(dir.path(), "2026-01-01-q", "two").unwrap();
        assert_ne!(first, second);
        assert_eq!(std::fs::read_to_string(first).unwrap(), "one");
        assert_eq!(std::fs::read_to_string(second).unwrap(), "two");
    }
}
