//! A code-writing seat's reply (design note 004): the files of a version, each with a path
//! that must stay inside the work tree, and a summary. Model output is untrusted: a file whose
//! path escapes, a file too large, or anything that asks moot to run a command is refused and
//! listed, the rest kept; a reply with no usable file is unusable.

use super::worktree::safe_path;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The largest file a version may write, in bytes.
pub const LARGEST_FILE: usize = 256 * 1024;

/// The most files one version may write.
pub const MOST_FILES: usize = 20;

/// A usable version from a reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeReply {
    pub summary: String,
    /// (path, contents), paths checked and normalised.
    pub files: Vec<(String, String)>,
    /// What was refused and why, for the record.
    pub refused: Vec<String>,
}

/// The schema a code-writing seat answers with.
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "summary": {"type": "string", "description": "What this version does and why, in a few sentences."},
            "files": {
                "type": "array", "minItems": 1, "maxItems": MOST_FILES,
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "Relative to the project root."},
                        "content": {"type": "string", "description": "The whole file."}
                    },
                    "required": ["path", "content"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["summary", "files"],
        "additionalProperties": false
    })
}

/// Why a reply makes no version: it lists no files, or none of them may be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoVersion {
    #[error("`files` must be a list of {{path, content}}")]
    NoFiles,
    #[error("no file can be written{}", refused_list(.0))]
    NothingWritable(Vec<String>),
}

fn refused_list(refused: &[String]) -> String {
    if refused.is_empty() {
        String::new()
    } else {
        format!(": {}", refused.join("; "))
    }
}

/// Reads a reply into a version, refusing what may not be written.
pub fn parse(reply: &Value) -> Result<CodeReply, NoVersion> {
    let summary = reply
        .get("summary")
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or("")
        .to_string();
    let mut refused = Vec::new();
    for field in ["commands", "command", "shell", "run", "exec"] {
        if reply.get(field).is_some() {
            refused.push(format!(
                "`{field}`: moot runs only the configured hooks, never a command from a reply"
            ));
        }
    }
    let entries = reply
        .get("files")
        .and_then(Value::as_array)
        .ok_or(NoVersion::NoFiles)?;
    let mut files: Vec<(String, String)> = Vec::new();
    for entry in entries.iter().take(MOST_FILES) {
        let path = entry.get("path").and_then(Value::as_str).unwrap_or("");
        let Some(content) = entry.get("content").and_then(Value::as_str) else {
            refused.push(format!("{path:?}: no `content`"));
            continue;
        };
        match safe_path(path) {
            Err(why) => refused.push(why.to_string()),
            Ok(_) if let Some(why) = super::worktree::configures_git(path) => refused.push(why),
            Ok(_) if content.len() > LARGEST_FILE => refused.push(format!(
                "{path:?}: {} bytes, more than the {LARGEST_FILE} a version may write",
                content.len()
            )),
            Ok(clean) => {
                let clean = clean.to_string_lossy().to_string();
                files.retain(|(p, _)| *p != clean);
                files.push((clean, content.to_string()));
            }
        }
    }
    if entries.len() > MOST_FILES {
        refused.push(format!(
            "{} files beyond the {MOST_FILES} a version may write",
            entries.len() - MOST_FILES
        ));
    }
    if files.is_empty() {
        return Err(NoVersion::NothingWritable(refused));
    }
    Ok(CodeReply {
        summary,
        files,
        refused,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_oversized_files_and_commands_are_refused_and_the_rest_kept() {
        let reply = json!({
            "summary": "retry honours Retry-After",
            "commands": ["rm -rf /"],
            "files": [
                {"path": "src/retry.rs", "content": "fn retry() {}"},
                {"path": "../outside.rs", "content": "x"},
                {"path": "/etc/passwd", "content": "x"},
                {"path": "big.rs", "content": "x".repeat(LARGEST_FILE + 1)},
                {"path": "./src/retry.rs", "content": "fn retry() { /* v2 */ }"},
                {"path": ".gitattributes", "content": "*.py diff=evil"},
                {"path": "vendor/.gitmodules", "content": "[submodule \"x\"]"}
            ]
        });
        let parsed = parse(&reply).unwrap();
        assert_eq!(
            parsed.files,
            vec![(
                "src/retry.rs".to_string(),
                "fn retry() { /* v2 */ }".to_string()
            )]
        );
        assert_eq!(parsed.refused.len(), 6, "{:?}", parsed.refused);
        assert_eq!(
            parsed
                .refused
                .iter()
                .filter(|r| r.contains("configures git"))
                .count(),
            2
        );
        assert!(parsed.refused[0].contains("never a command"));
        assert!(parsed.refused.iter().any(|r| r.contains("`..`")));
        assert!(parsed.refused.iter().any(|r| r.contains("absolute")));
        assert!(parsed.refused.iter().any(|r| r.contains("more than")));
    }

    #[test]
    fn a_reply_with_nothing_writable_is_unusable() {
        let err = parse(
            &json!({"summary": "x", "files": [{"path": ".git/hooks/pre-commit", "content": "x"}]}),
        )
        .unwrap_err();
        let said = err.to_string();
        assert!(
            said.starts_with("no file can be written: ") && said.contains(".git"),
            "{said}"
        );
        assert_eq!(
            parse(&json!({"summary": "x"})).unwrap_err(),
            NoVersion::NoFiles
        );
        assert_eq!(schema()["properties"]["files"]["maxItems"], MOST_FILES);
    }
}
