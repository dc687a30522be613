//! Where something stands in a config file, as `file:line:column`, for messages that point at
//! it: shared by the config's own checks and each protocol's reading of its table.

use std::path::Path;

/// The first place `needle` appears in a file, as "path:line:column", for errors found after
/// parsing.
pub fn locate(path: &Path, needle: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let (line, column) = line_column(&text, text.find(needle).unwrap_or(0));
    format!("{}:{line}:{column}", path.display())
}

/// Where `key` is set in the `[table]` of the config file at `path` (`file:line:column`): the
/// key's own line, so a typo is pointed at where it stands; the table's header when the key is
/// not there (or none is named); a needle that is itself a header (`[[panel.options]]`) where
/// it stands.
pub fn locate_in_table(path: &Path, table: &str, key: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let (line, column) = line_column(&text, key_offset(&text, table, key));
    format!("{}:{line}:{column}", path.display())
}

fn key_offset(text: &str, table: &str, key: &str) -> usize {
    if key.starts_with('[') {
        return text.find(key).unwrap_or(0);
    }
    let (own, nested, listed) = (
        format!("[{table}]"),
        format!("[{table}."),
        format!("[[{table}."),
    );
    let mut in_table = false;
    let mut header = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let at = offset + (line.len() - trimmed.len());
        offset += line.len();
        if trimmed.starts_with('[') {
            in_table = trimmed.starts_with(&own)
                || trimmed.starts_with(&nested)
                || trimmed.starts_with(&listed);
            if in_table && header.is_none() {
                header = Some(at);
            }
        } else if in_table
            && !key.is_empty()
            && trimmed
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        {
            return at;
        }
    }
    header.unwrap_or(0)
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..text.floor_char_boundary(offset)];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key is found on its own line within its table, not in another table or a comment.
    #[test]
    fn a_key_is_located_in_its_own_table() {
        let text = "# max_rounds in a comment\n[arena]\nmax_rounds = 3\n\n[panel]\n  max_rounds = 2\n[[panel.options]]\nid = \"A\"\n";
        let at = |table: &str, key: &str| line_column(text, key_offset(text, table, key));
        assert_eq!(at("panel", "max_rounds"), (6, 3));
        assert_eq!(at("arena", "max_rounds"), (3, 1));
        assert_eq!(at("panel", "nowhere"), (5, 1), "the table's header");
        assert_eq!(at("panel", "id"), (8, 1), "keys of its nested tables too");
        assert_eq!(at("dialogue", "x"), (1, 1));
    }
}
