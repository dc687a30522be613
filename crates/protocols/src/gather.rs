//! Gathers the raw material of a shared context K from a working directory: lines of code and
//! docs that mention the topic's key terms (honouring .gitignore, skipping binaries), and the
//! git history of the files that matched. A moderator step condenses it into facts.

use crate::beneath::Beneath;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Bytes of gathered material handed to the moderator, by default.
pub const DEFAULT_BUDGET: usize = 24_000;
/// Files larger than this are not searched (generated code, data, bundles).
const MAX_FILE_BYTES: u64 = 512 * 1024;
/// Matching lines kept per file, and files kept per kind.
const LINES_PER_FILE: usize = 4;
const CODE_FILES: usize = 12;
const DOC_FILES: usize = 8;
const COMMITS: usize = 15;
/// A matching line is cut to this many characters.
const LINE_CHARS: usize = 200;

/// One line of a file that mentions a key term.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Excerpt {
    /// Relative to the gathering root, `/`-separated.
    pub path: String,
    pub line: u32,
    pub text: String,
}

/// A commit that touched a matching file or names a key term.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Commit {
    pub hash: String,
    pub subject: String,
}

/// What gathering found, already trimmed to its budget; stored with the debate, so a resume
/// uses the same material.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Gathered {
    /// The directory searched (absolute), which cited paths are relative to.
    pub root: String,
    pub terms: Vec<String>,
    pub code: Vec<Excerpt>,
    pub docs: Vec<Excerpt>,
    pub commits: Vec<Commit>,
    /// Files searched and files skipped as binary or too large.
    pub files_searched: usize,
    pub files_skipped: usize,
    /// What the person should know: no git history, what the budget cut.
    pub notes: Vec<String>,
}

impl Gathered {
    /// Whether `source` (`path:line` or a commit hash) is something gathering found, and the
    /// file and line to open for it. A model's citation is only trusted through this.
    pub fn locate(&self, source: &str) -> Option<Located> {
        let source = source.trim().trim_start_matches("commit ").trim();
        if let Some(commit) = self.commits.iter().find(|c| {
            source.len() >= 7 && (c.hash.starts_with(source) || source.starts_with(&c.hash))
        }) {
            return Some(Located::Commit(commit.hash.clone()));
        }
        let (path, line) = source.rsplit_once(':')?;
        let line: u32 = line.trim().parse().ok()?;
        let path = path.trim();
        self.code
            .iter()
            .chain(&self.docs)
            .any(|e| e.path == path)
            .then(|| Located::File(path.to_string(), line))
    }

    /// The material as the moderator reads it.
    pub fn to_prompt(&self) -> String {
        let mut out = format!("Search terms: {}\n", self.terms.join(", "));
        let section = |out: &mut String, title: &str, excerpts: &[Excerpt]| {
            if excerpts.is_empty() {
                return;
            }
            out.push_str(&format!("\n## {title} (path:line: text)\n"));
            for e in excerpts {
                out.push_str(&format!("{}:{}: {}\n", e.path, e.line, e.text));
            }
        };
        section(&mut out, "Code", &self.code);
        section(&mut out, "Docs", &self.docs);
        if !self.commits.is_empty() {
            out.push_str("\n## Git history of the matching paths (hash subject)\n");
            for c in &self.commits {
                out.push_str(&format!("{} {}\n", c.hash, c.subject));
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.code.is_empty() && self.docs.is_empty() && self.commits.is_empty()
    }
}

/// A trusted citation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    File(String, u32),
    Commit(String),
}

/// What to gather.
pub struct Request<'a> {
    pub root: &'a Path,
    pub topic: &'a str,
    /// `--context` paths (relative to `root` or absolute): searched first, ranked ahead.
    pub extra: &'a [PathBuf],
    pub budget: usize,
}

/// Why gathering could not start: the working directory or a `--context` path is unusable.
#[derive(Debug, thiserror::Error)]
pub enum GatherError {
    #[error("{}: cannot be read ({source})", .path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--context {}: cannot be read ({source})", .path.display())]
    ContextUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--context {}: no such file or directory (give a file or a directory to read)", .0.display())]
    Missing(PathBuf),
    #[error("--context {}: the directory is empty", .0.display())]
    Empty(PathBuf),
    #[error("--context {}: cannot be read (check its permissions)", .0.display())]
    Denied(PathBuf),
    #[error("cannot search for the topic's terms: {0}")]
    Terms(String),
}

/// Gathers from `request.root`. Errors only for an unusable `--context` path.
pub fn gather(request: &Request<'_>) -> Result<Gathered, GatherError> {
    let root = request
        .root
        .canonicalize()
        .map_err(|source| GatherError::Unreadable {
            path: request.root.to_path_buf(),
            source,
        })?;
    let mut extra = Vec::new();
    for given in request.extra {
        let path = root
            .join(given)
            .canonicalize()
            .map_err(|_| GatherError::Missing(given.clone()))?;
        if path.is_dir() {
            let mut entries =
                std::fs::read_dir(&path).map_err(|source| GatherError::ContextUnreadable {
                    path: given.clone(),
                    source,
                })?;
            if entries.next().is_none() {
                return Err(GatherError::Empty(given.clone()));
            }
        } else if std::fs::File::open(&path).is_err() {
            return Err(GatherError::Denied(given.clone()));
        }
        extra.push(path);
    }
    let terms = crate::debate::key_terms(request.topic);
    let mut gathered = Gathered {
        root: root.display().to_string(),
        terms: terms.clone(),
        ..Gathered::default()
    };
    if terms.is_empty() {
        gathered
            .notes
            .push("the topic has no searchable terms; no code was searched".into());
        return Ok(gathered);
    }
    let matcher = matcher(&terms)?;
    let mut found = search(&root, std::slice::from_ref(&root), &matcher, &terms, false);
    if !extra.is_empty() {
        // `--context` sources are read even where .gitignore would skip them.
        let given = search(&root, &extra, &matcher, &terms, true);
        // A source that gave nothing is said, not passed over in silence.
        for (path, asked) in extra.iter().zip(request.extra) {
            let under = relative(&root, path).unwrap_or_else(|| path.display().to_string());
            let gave = given.files.keys().any(|file| {
                file == &under || file.starts_with(&format!("{under}/")) || under.is_empty()
            });
            if !gave {
                gathered.notes.push(format!(
                    "--context {}: no readable text file in it (binary, over {} KB, or unreadable), so it added nothing",
                    asked.display(),
                    MAX_FILE_BYTES / 1024
                ));
            }
        }
        found.searched += given.searched;
        found.skipped += given.skipped;
        for (path, file) in given.files {
            let entry = found.files.entry(path).or_default();
            entry.given = true;
            if entry.lines.is_empty() {
                entry.lines = file.lines;
                entry.terms = file.terms;
            }
            entry.head = file.head;
        }
    }
    gathered.files_searched = found.searched;
    gathered.files_skipped = found.skipped;
    let mut ranked: Vec<(&String, &FileHits)> = found.files.iter().collect();
    ranked.sort_by(|a, b| {
        b.1.given
            .cmp(&a.1.given)
            .then(b.1.terms.len().cmp(&a.1.terms.len()))
            .then(b.1.count.cmp(&a.1.count))
            .then(a.0.cmp(b.0))
    });
    let (mut docs, mut code) = (Vec::new(), Vec::new());
    for (path, file) in ranked {
        let is_doc = is_doc(path);
        let (bucket, cap) = if is_doc {
            (&mut docs, DOC_FILES)
        } else {
            (&mut code, CODE_FILES)
        };
        if bucket.len() >= cap && !file.given {
            continue;
        }
        let mut lines = file.lines.clone();
        if lines.is_empty() {
            lines = file.head.clone();
        }
        bucket.push((path.clone(), lines));
    }
    let mut budget = request.budget.saturating_sub(200);
    let mut take =
        |files: Vec<(String, Vec<(u32, String)>)>, out: &mut Vec<Excerpt>, cut: &mut usize| {
            for (path, lines) in files {
                for (line, text) in lines {
                    let cost = path.len() + text.len() + 12;
                    if cost > budget {
                        *cut += 1;
                        continue;
                    }
                    budget -= cost;
                    out.push(Excerpt {
                        path: path.clone(),
                        line,
                        text,
                    });
                }
            }
        };
    let mut cut = 0;
    take(docs, &mut gathered.docs, &mut cut);
    take(code, &mut gathered.code, &mut cut);
    let paths: Vec<String> = gathered
        .code
        .iter()
        .chain(&gathered.docs)
        .map(|e| e.path.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    match history(&root, &paths, &terms) {
        Some(commits) => {
            for commit in commits {
                let cost = commit.hash.len() + commit.subject.len() + 2;
                if cost > budget {
                    cut += 1;
                    continue;
                }
                budget -= cost;
                gathered.commits.push(commit);
            }
        }
        None => gathered.notes.push(format!(
            "{} is not a git work tree (or git is not installed): no history was read",
            root.display()
        )),
    }
    if cut > 0 {
        gathered.notes.push(format!(
            "{cut} matching line(s) or commit(s) were left out to keep within the context budget of {} bytes",
            request.budget
        ));
    }
    if gathered.files_skipped > 0 {
        gathered.notes.push(format!(
            "{} binary or oversized file(s) were skipped",
            gathered.files_skipped
        ));
    }
    Ok(gathered)
}

fn matcher(terms: &[String]) -> Result<RegexMatcher, GatherError> {
    let alternation = terms
        .iter()
        .map(|t| regex_syntax_escape(t))
        .collect::<Vec<_>>()
        .join("|");
    RegexMatcherBuilder::new()
        .case_insensitive(true)
        .build(&format!(r"\b(?:{alternation})"))
        .map_err(|e| GatherError::Terms(e.to_string()))
}

fn regex_syntax_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$#&-~".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

/// What one file contributed.
#[derive(Debug, Clone, Default)]
struct FileHits {
    /// Matching lines (number, trimmed text), the first few.
    lines: Vec<(u32, String)>,
    count: usize,
    terms: BTreeSet<usize>,
    /// Its first lines, for a `--context` file that mentions no term.
    head: Vec<(u32, String)>,
    given: bool,
}

struct Found {
    files: BTreeMap<String, FileHits>,
    searched: usize,
    skipped: usize,
}

/// Searches every file under `roots` in parallel (two threads per core at most).
fn search(
    root: &Path,
    roots: &[PathBuf],
    matcher: &RegexMatcher,
    terms: &[String],
    given: bool,
) -> Found {
    let found = Mutex::new(Found {
        files: BTreeMap::new(),
        searched: 0,
        skipped: 0,
    });
    let mut builder = ignore::WalkBuilder::new(&roots[0]);
    for other in &roots[1..] {
        builder.add(other);
    }
    // Each file is read beneath the root it was found under, with no symlink anywhere on
    // the way (the walk follows none, and one swapped in since is refused, not followed).
    // A root that is a file is read beneath its directory.
    let bases: Vec<(&Path, PathBuf, Option<Beneath>)> = roots
        .iter()
        .map(|root| {
            let dir = if root.is_dir() {
                root.clone()
            } else {
                root.parent()
                    .map_or_else(|| PathBuf::from("/"), Path::to_path_buf)
            };
            let tree = Beneath::open(&dir).ok();
            (root.as_path(), dir, tree)
        })
        .collect();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    builder
        .hidden(true)
        .git_ignore(!given)
        .git_exclude(!given)
        .ignore(!given)
        .parents(!given)
        .require_git(false)
        .threads(threads);
    builder.build_parallel().run(|| {
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .build();
        let (found, bases) = (&found, &bases);
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return ignore::WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return ignore::WalkState::Continue;
            }
            let path = entry.path();
            if entry.metadata().map_or(true, |m| m.len() > MAX_FILE_BYTES) {
                lock(found).skipped += 1;
                return ignore::WalkState::Continue;
            }
            // A `--context` file outside the working directory is named by its whole path.
            let Some(relative) =
                relative(root, path).or_else(|| given.then(|| path.display().to_string()))
            else {
                return ignore::WalkState::Continue;
            };
            let mut collector = Collector {
                terms,
                hits: FileHits {
                    given,
                    ..FileHits::default()
                },
                binary: false,
            };
            // A file that cannot be read (or only through a symlink) or is not UTF-8 text is
            // skipped like a binary.
            let bytes = bases
                .iter()
                .filter(|(root, _, _)| path.starts_with(root))
                .find_map(|(_, dir, tree)| Some((path.strip_prefix(dir).ok()?, tree.as_ref()?)))
                .and_then(|(inside, tree)| tree.read(inside, MAX_FILE_BYTES).ok());
            // moot's own records are not the project's material, unless given by name.
            if !given && moots_own(bytes.as_deref()) {
                return ignore::WalkState::Continue;
            }
            let binary = match &bytes {
                Some(bytes) => {
                    searcher
                        .search_slice(matcher, bytes, &mut collector)
                        .is_err()
                        || collector.binary
                }
                None => true,
            };
            let mut hits = collector.hits;
            // A file name that names a term counts as one more distinct term.
            let name = relative.to_lowercase();
            for (index, term) in terms.iter().enumerate() {
                if name.contains(term.as_str()) {
                    hits.terms.insert(index);
                }
            }
            if given && hits.lines.is_empty() && !binary {
                hits.head = head(bytes.as_deref().unwrap_or_default());
            }
            let mut found = lock(found);
            found.searched += 1;
            if binary {
                found.skipped += 1;
            } else if hits.count > 0 || given {
                found.files.insert(relative, hits);
            }
            ignore::WalkState::Continue
        })
    });
    found.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Whether a file's bytes are a record moot wrote (seed review 002/003 #11), or a file of an
/// arena directory moot wrote (B6: its manifest once stood in K as the topic, three times).
fn moots_own(bytes: Option<&[u8]>) -> bool {
    bytes.is_some_and(|b| {
        let text = String::from_utf8_lossy(b);
        crate::debate::written_by_moot(&text) || crate::arena::written_by_moot(&text)
    })
}

/// Collects one file's matching lines; notices binary content.
struct Collector<'a> {
    terms: &'a [String],
    hits: FileHits,
    binary: bool,
}

impl Sink for Collector<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let line = std::str::from_utf8(found.bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        let hits = &mut self.hits;
        hits.count += 1;
        let lower = line.to_lowercase();
        for (index, term) in self.terms.iter().enumerate() {
            if lower.contains(term.as_str()) {
                hits.terms.insert(index);
            }
        }
        if hits.lines.len() < LINES_PER_FILE {
            let number = found.line_number().unwrap_or(0) as u32;
            hits.lines.push((number, clip(line.trim())));
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// `path` relative to `root`, `/`-separated, if it lies under it.
fn relative(root: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(root).ok()?;
    let parts: Vec<String> = relative
        .components()
        .map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Option<_>>()?;
    Some(parts.join("/"))
}

/// The first non-empty lines of a file's contents.
fn head(bytes: &[u8]) -> Vec<(u32, String)> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Vec::new();
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .take(LINES_PER_FILE * 2)
        .map(|(i, l)| (i as u32 + 1, clip(l.trim())))
        .collect()
}

fn clip(line: &str) -> String {
    if line.chars().count() <= LINE_CHARS {
        line.to_string()
    } else {
        let mut text: String = line.chars().take(LINE_CHARS).collect();
        text.push('…');
        text
    }
}

/// README, docs and decision records: prose about the code.
fn is_doc(path: &str) -> bool {
    let lower = path.to_lowercase();
    let extension = lower.rsplit('.').next().unwrap_or("");
    matches!(extension, "md" | "markdown" | "rst" | "adoc" | "txt")
        || lower.starts_with("docs/")
        || lower.starts_with("doc/")
        || lower.contains("/adr/")
        || lower.starts_with("adr/")
        || lower.starts_with("readme")
}

/// Commits that touched the matching paths, then commits whose subject names a term; the git
/// binary is used so that whatever git the person has configured (safe directories, say)
/// applies. None when `root` is not a work tree.
fn history(root: &Path, paths: &[String], terms: &[String]) -> Option<Vec<Commit>> {
    let git = |args: &[&str]| -> Option<String> {
        let output = Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .output()
            .ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
    };
    match git(&["rev-parse", "--is-inside-work-tree"]) {
        Some(answer) if answer.trim() == "true" => {}
        _ => return None,
    }
    let limit = format!("-n{COMMITS}");
    let format = "--format=%h%x1f%s";
    let mut commits: Vec<Commit> = Vec::new();
    let mut read = |text: Option<String>| {
        for line in text.unwrap_or_default().lines() {
            if let Some((hash, subject)) = line.split_once('\u{1f}')
                && !commits.iter().any(|c| c.hash == hash)
                && commits.len() < COMMITS
            {
                commits.push(Commit {
                    hash: hash.to_string(),
                    subject: clip(subject.trim()),
                });
            }
        }
    };
    if !paths.is_empty() {
        let mut args: Vec<&str> = vec!["log", &limit, format, "--"];
        args.extend(paths.iter().take(20).map(String::as_str));
        read(git(&args));
    }
    let greps: Vec<String> = terms.iter().map(|t| format!("--grep={t}")).collect();
    let mut args: Vec<&str> = vec!["log", &limit, format, "-i"];
    args.extend(greps.iter().map(String::as_str));
    read(git(&args));
    Some(commits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_gathered_sources_are_trusted() {
        let gathered = Gathered {
            code: vec![Excerpt {
                path: "src/retry.rs".into(),
                line: 3,
                text: "loop {".into(),
            }],
            commits: vec![Commit {
                hash: "1a2b3c4".into(),
                subject: "Add retry".into(),
            }],
            ..Gathered::default()
        };
        assert_eq!(
            gathered.locate("src/retry.rs:9"),
            Some(Located::File("src/retry.rs".into(), 9))
        );
        assert_eq!(
            gathered.locate("commit 1a2b3c4"),
            Some(Located::Commit("1a2b3c4".into()))
        );
        assert_eq!(gathered.locate("/etc/passwd:1"), None);
        assert_eq!(gathered.locate("../src/retry.rs:1"), None);
        assert_eq!(gathered.locate("1a2b"), None);
    }
}

#[cfg(test)]
mod on_disk {
    use super::*;
    use std::fs;

    fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args([
                "-c",
                "user.name=moot",
                "-c",
                "user.email=moot@example.invalid",
            ])
            .args(args)
            .env_remove("GIT_DIR")
            .output()
            .unwrap();
        assert!(status.status.success(), "git {args:?}: {status:?}");
    }

    fn write(dir: &Path, path: &str, content: &[u8]) {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    fn repository() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            "src/client.rs",
            b"// the hand-rolled retry loop\nfn call() {\n    loop { retry(); }\n}\n",
        );
        write(root, "src/unrelated.rs", b"fn main() {}\n");
        write(
            root,
            "docs/adr/0003-retries.md",
            b"# ADR 3: Retries\n\nWe retry idempotent calls three times.\n",
        );
        write(
            root,
            "README.md",
            b"# service\n\nTalks to the billing API with a retry loop.\n",
        );
        write(root, "assets/logo.bin", b"retry\x00\x01\x02 binary");
        write(root, ".gitignore", b"target/\n");
        write(root, "target/generated.rs", b"retry retry retry\n");
        git(root, &["init", "-q"]);
        git(root, &["add", "."]);
        git(
            root,
            &["commit", "-q", "-m", "Add the retry loop to the client"],
        );
        write(root, "src/unrelated.rs", b"fn main() { println!(); }\n");
        git(root, &["commit", "-q", "-am", "Touch something else"]);
        dir
    }

    /// Seed review 002/003 #11: moot's own decision records and follow-up drafts are not the
    /// project's material, unless given by name with `--context`.
    #[test]
    fn moots_own_records_are_not_gathered_unless_given() {
        let dir = repository();
        let root = dir.path();
        write(
            root,
            "docs/decisions/2026-11-25-retry.md",
            b"# Debate: \"Replace our retry loop\"\n\n**Debate:** DEB-abcd1234 \xc2\xb7 **Protocol:** formal dialogue\n\nThe retry layer wins.\n",
        );
        write(
            root,
            "docs/decisions/2026-11-25-retry-issue.md",
            b"# Implement decision: retry\n\nA moot debate (DEB-abcd1234, 2 round(s)) considered the retry loop.\n",
        );
        // B6: an arena directory moot wrote (or exported) is not the project's either.
        write(
            root,
            "arenas/DEB-abcd1234/manifest.json",
            br#"{"debate_id": "DEB-abcd1234", "topic": "Replace our hand-rolled retry loop with tower's retry layer"}"#,
        );
        write(
            root,
            "runtime/debates/DEB-abcd1234/manifest.json",
            br#"{"debate_id": "debate-042", "topic": "the retry loop and tower", "exported_by": "moot"}"#,
        );
        write(
            root,
            "arenas/DEB-abcd1234/transcript/turn_1_pro.json",
            br#"{"turn_number": 1, "argument_text": "tower's retry layer replaces the loop", "metadata": {"moot": {"round": 1}}}"#,
        );
        let request = |extra: &[PathBuf]| {
            gather(&Request {
                root,
                topic: "Replace our hand-rolled retry loop with tower's retry layer",
                extra,
                budget: DEFAULT_BUDGET,
            })
            .unwrap()
        };
        let docs = |gathered: &Gathered| -> Vec<String> {
            gathered.docs.iter().map(|e| e.path.clone()).collect()
        };
        let found = docs(&request(&[]));
        assert!(
            found.iter().any(|p| p == "docs/adr/0003-retries.md"),
            "{found:?}"
        );
        assert!(
            !found.iter().any(|p| p.starts_with("docs/decisions/")),
            "{found:?}"
        );
        let gathered = request(&[]);
        let everything: Vec<&String> = gathered
            .code
            .iter()
            .chain(&gathered.docs)
            .map(|e| &e.path)
            .collect();
        assert!(
            !everything
                .iter()
                .any(|p| p.starts_with("arenas/") || p.starts_with("runtime/")),
            "{everything:?}"
        );
        let given = [PathBuf::from("docs/decisions/2026-11-25-retry.md")];
        let found = docs(&request(&given));
        assert!(
            found
                .iter()
                .any(|p| p == "docs/decisions/2026-11-25-retry.md"),
            "{found:?}"
        );
    }

    #[test]
    fn a_git_repository_gives_code_docs_and_the_history_of_matching_paths() {
        let dir = repository();
        let gathered = gather(&Request {
            root: dir.path(),
            topic: "Replace our hand-rolled retry loop with tower's retry layer",
            extra: &[],
            budget: DEFAULT_BUDGET,
        })
        .unwrap();
        let code: Vec<&str> = gathered.code.iter().map(|e| e.path.as_str()).collect();
        let docs: Vec<&str> = gathered.docs.iter().map(|e| e.path.as_str()).collect();
        assert!(code.contains(&"src/client.rs"), "{code:?}");
        assert!(
            !code.iter().any(|p| p.starts_with("target/")),
            "ignored files searched: {code:?}"
        );
        assert!(
            !code.contains(&"assets/logo.bin"),
            "binary searched: {code:?}"
        );
        assert!(
            docs.contains(&"docs/adr/0003-retries.md") && docs.contains(&"README.md"),
            "{docs:?}"
        );
        let client = gathered
            .code
            .iter()
            .find(|e| e.path == "src/client.rs")
            .unwrap();
        assert_eq!(client.line, 1);
        assert_eq!(gathered.commits.len(), 1, "{:?}", gathered.commits);
        assert_eq!(
            gathered.commits[0].subject,
            "Add the retry loop to the client"
        );
        assert!(
            gathered.files_skipped >= 1,
            "the binary file was not counted as skipped"
        );
        assert!(gathered.notes.iter().all(|n| !n.contains("git work tree")));
        let prompt = gathered.to_prompt();
        assert!(
            prompt.contains("src/client.rs:3: loop { retry(); }"),
            "{prompt}"
        );
        assert!(prompt.contains(&gathered.commits[0].hash));
    }

    #[test]
    fn outside_git_there_is_no_history_and_a_note_says_so_once() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "notes.txt", b"the retry budget is 3\n");
        let gathered = gather(&Request {
            root: dir.path(),
            topic: "retry budget",
            extra: &[],
            budget: DEFAULT_BUDGET,
        })
        .unwrap();
        assert!(gathered.commits.is_empty());
        let notes: Vec<&String> = gathered
            .notes
            .iter()
            .filter(|n| n.contains("not a git work tree"))
            .collect();
        assert_eq!(notes.len(), 1, "{:?}", gathered.notes);
        assert_eq!(gathered.docs.len(), 1);
    }

    #[test]
    fn context_paths_are_read_first_even_when_ignored_and_bad_ones_are_named() {
        let dir = repository();
        let extra = [PathBuf::from("target/generated.rs")];
        let gathered = gather(&Request {
            root: dir.path(),
            topic: "retry",
            extra: &extra,
            budget: DEFAULT_BUDGET,
        })
        .unwrap();
        assert_eq!(gathered.code[0].path, "target/generated.rs");
        let missing = [PathBuf::from("no/such/dir")];
        let err = gather(&Request {
            root: dir.path(),
            topic: "retry",
            extra: &missing,
            budget: DEFAULT_BUDGET,
        })
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("--context no/such/dir") && err.contains("no such file"),
            "{err}"
        );
        fs::create_dir(dir.path().join("empty")).unwrap();
        let empty = [PathBuf::from("empty")];
        let err = gather(&Request {
            root: dir.path(),
            topic: "retry",
            extra: &empty,
            budget: DEFAULT_BUDGET,
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("empty"), "{err}");
    }

    /// Seed review 002/003 #4: a `--context` outside the working directory (absolute) is
    /// read, named by its whole path, and one that yields nothing says so.
    #[test]
    fn context_outside_the_working_directory_is_read_and_an_empty_one_is_named() {
        let dir = repository();
        let with_context = |extra: &Path| {
            gather(&Request {
                root: dir.path(),
                topic: "retry layer",
                extra: &[extra.to_path_buf()],
                budget: DEFAULT_BUDGET,
            })
            .unwrap()
        };
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "notes.md", b"tower retry layer notes\n");
        let gathered = with_context(outside.path());
        let notes = outside.path().join("notes.md").display().to_string();
        assert!(
            gathered.docs.iter().any(|d| d.path == notes),
            "{:?}",
            gathered.docs.iter().map(|d| &d.path).collect::<Vec<_>>()
        );
        let binary = tempfile::tempdir().unwrap();
        write(binary.path(), "blob.bin", &[0u8, 1, 2, 0, 255, 0]);
        let gathered = with_context(binary.path());
        assert!(
            gathered
                .notes
                .iter()
                .any(|n| n.contains("no readable text file in it")),
            "{:?}",
            gathered.notes
        );
    }

    /// Issue 22: nothing below the working directory or a `--context` is read through a
    /// symlink, to a file or a directory, and a FIFO does not hang the gathering.
    #[test]
    fn no_file_is_read_through_a_symlink_and_a_fifo_does_not_hang() {
        let dir = repository();
        let outside = tempfile::tempdir().unwrap();
        write(
            outside.path(),
            "secret.md",
            b"retry layer secret from outside\n",
        );
        std::os::unix::fs::symlink(outside.path(), dir.path().join("linked")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.md"),
            dir.path().join("docs/linked.md"),
        )
        .unwrap();
        let context = tempfile::tempdir().unwrap();
        write(context.path(), "own.md", b"retry layer notes of its own\n");
        std::os::unix::fs::symlink(
            outside.path().join("secret.md"),
            context.path().join("link.md"),
        )
        .unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(context.path().join("pipe.md"))
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo: {made}");
        let gathered = gather(&Request {
            root: dir.path(),
            topic: "retry layer",
            extra: &[context.path().to_path_buf()],
            budget: DEFAULT_BUDGET,
        })
        .unwrap();
        let read: Vec<String> = gathered
            .code
            .iter()
            .map(|f| f.path.clone())
            .chain(gathered.docs.iter().map(|d| d.path.clone()))
            .collect();
        assert!(read.iter().any(|p| p.ends_with("own.md")), "{read:?}");
        assert!(
            !gathered.to_prompt().contains("secret from outside"),
            "{read:?}"
        );
        assert!(!read.iter().any(|p| p.contains("link")), "{read:?}");
    }

    #[test]
    fn the_budget_bounds_what_is_kept_and_says_what_it_cut() {
        let dir = repository();
        let gathered = gather(&Request {
            root: dir.path(),
            topic: "retry loop",
            extra: &[],
            budget: 300,
        })
        .unwrap();
        assert!(
            gathered.to_prompt().len() <= 300 + 120,
            "{}",
            gathered.to_prompt()
        );
        assert!(
            gathered
                .notes
                .iter()
                .any(|n| n.contains("context budget of 300 bytes")),
            "{:?}",
            gathered.notes
        );
    }
}
