//! Openings kept on disk: the KV cache of a prompt's system part (the same text for every seat
//! and every debate of a kind), saved the first time the embedded model reads it and loaded by
//! later runs instead of being read again. A cache, never a source of truth: a file that is
//! missing, torn or from another model or build is ignored and written anew.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::token::LlamaToken;
use moot_llm::models::identity;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Openings shorter than this are read again: a file would save less than it costs.
pub(super) const WORTH_KEEPING: usize = 64;

/// How many openings are kept in all: a debate has five system prompts, so this holds a few
/// models' and builds' worth.
const KEPT_FILES: usize = 32;

/// Where one model's openings are kept, and what makes a kept one fit this model and build.
pub(super) struct Openings {
    dir: Option<PathBuf>,
    /// What a file's cells depend on besides its tokens: the model file, the llama.cpp build
    /// and the cache layout.
    fit: String,
}

impl Openings {
    /// The openings of the model at `model` kept in `dir` (none kept when `dir` is None), for
    /// a context of `sequences` parts (llama.cpp loads a file only into as many) whose cache
    /// is laid out as `layout` says.
    pub(super) fn new(
        dir: Option<PathBuf>,
        model: &Path,
        sequences: u32,
        layout: &str,
    ) -> Openings {
        // The program is in it because the llama.cpp it links lays the cells out and computes
        // them; another build's files then go unused, and `save` prunes them.
        let program = std::env::current_exe().unwrap_or_default();
        let fit = format!(
            "{} ({}) | {} ({}) | {sequences} sequences, {layout}",
            model.display(),
            identity(model),
            program.display(),
            identity(&program),
        );
        Openings { dir, fit }
    }

    /// The file that keeps `tokens`' cells. Its name is a hash, so nothing a prompt says
    /// chooses a path.
    fn file(&self, tokens: &[LlamaToken]) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        let mut hash = Sha256::new();
        hash.update(self.fit.as_bytes());
        for token in tokens {
            hash.update(token.0.to_le_bytes());
        }
        Some(dir.join(format!("{:x}.kv", hash.finalize())))
    }

    /// Whether `tokens` are kept.
    pub(super) fn kept(&self, tokens: &[LlamaToken]) -> bool {
        self.file(tokens).is_some_and(|file| file.is_file())
    }

    /// Loads the kept `tokens` into sequence `seq`, which must hold nothing. False (and the
    /// sequence left empty) when they are not kept or the file does not hold exactly them.
    pub(super) fn load(
        &self,
        context: &mut LlamaContext<'_>,
        seq: u32,
        tokens: &[LlamaToken],
    ) -> bool {
        let Some(file) = self.file(tokens).filter(|file| file.is_file()) else {
            return false;
        };
        match context.state_seq_load_file(&file, seq as i32, tokens.len()) {
            Ok((loaded, _)) if loaded == tokens => true,
            _ => {
                let _ = context.clear_kv_cache_seq(Some(seq), None, None);
                // Torn, or from a build that lays cells out otherwise: the next read replaces it.
                let _ = std::fs::remove_file(&file);
                false
            }
        }
    }

    /// Keeps what sequence `seq` holds, which is exactly `tokens`. Written to a temporary
    /// file and renamed, so a reader never meets half a file; a failure only costs a read.
    pub(super) fn save(&self, context: &LlamaContext<'_>, seq: u32, tokens: &[LlamaToken]) {
        let Some(file) = self.file(tokens) else {
            return;
        };
        let Some(dir) = file.parent() else {
            return;
        };
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
        let partial = file.with_extension(format!("kv.{}.partial", std::process::id()));
        if context
            .state_seq_save_file(&partial, seq as i32, tokens)
            .is_ok()
        {
            let _ = std::fs::rename(&partial, &file);
        }
        let _ = std::fs::remove_file(&partial);
        keep_newest(dir, "kv", KEPT_FILES, None);
    }
}

/// Removes all but the `keep` most recently written files with `extension` in `dir`;
/// `in_use`, when given, is one of the `keep` whatever its age.
pub(super) fn keep_newest(dir: &Path, extension: &str, keep: usize, in_use: Option<&Path>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == extension))
        .filter(|path| Some(path.as_path()) != in_use)
        .filter_map(|path| Some((std::fs::metadata(&path).ok()?.modified().ok()?, path)))
        .collect();
    let keep = keep.saturating_sub(usize::from(in_use.is_some()));
    if files.len() <= keep {
        return;
    }
    files.sort();
    for (_, path) in &files[..files.len() - keep] {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn pruning_keeps_the_newest_openings_and_nothing_else_is_touched() {
        let dir = tempfile::tempdir().unwrap();
        for (index, name) in ["a.kv", "b.kv", "c.kv", "d.kv"].iter().enumerate() {
            let file = std::fs::File::create(dir.path().join(name)).unwrap();
            file.set_modified(UNIX_EPOCH + Duration::from_secs(1_000 + index as u64))
                .unwrap();
        }
        std::fs::write(dir.path().join("notes.txt"), "not an opening").unwrap();
        keep_newest(dir.path(), "kv", 2, None);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["c.kv", "d.kv", "notes.txt"]);
    }

    #[test]
    fn an_opening_is_named_by_its_tokens_and_what_its_cells_depend_on() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("model.gguf");
        std::fs::write(&model, "weights").unwrap();
        let tokens = [LlamaToken(1), LlamaToken(2)];
        let layout = "Q8_0 keys, Q8_0 values, flash attention 1";
        let kept = Openings::new(Some(dir.path().to_path_buf()), &model, 3, layout);
        let name = kept.file(&tokens).unwrap();
        assert_eq!(name.parent(), Some(dir.path()));
        assert_eq!(
            kept.file(&tokens),
            Some(name.clone()),
            "the same every time"
        );
        assert_ne!(kept.file(&tokens[..1]), Some(name.clone()));
        let other_count = Openings::new(Some(dir.path().to_path_buf()), &model, 4, layout);
        assert_ne!(other_count.file(&tokens), Some(name.clone()));
        let other_layout = Openings::new(
            Some(dir.path().to_path_buf()),
            &model,
            3,
            "Q8_0 keys, F16 values, flash attention 0",
        );
        assert_ne!(other_layout.file(&tokens), Some(name.clone()));
        std::fs::write(&model, "other weights").unwrap();
        let replaced = Openings::new(Some(dir.path().to_path_buf()), &model, 3, layout);
        assert_ne!(replaced.file(&tokens), Some(name));
        assert_eq!(Openings::new(None, &model, 3, layout).file(&tokens), None);
    }
}
