//! The embedded model's GGUF that tests and benchmarks run on: MOOT_TEST_MODEL, else the
//! default model in the models directory.

use std::path::PathBuf;

/// The GGUF to load; panics, saying how to get it, when there is none.
pub fn model_path() -> PathBuf {
    if let Some(path) = std::env::var_os("MOOT_TEST_MODEL").filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    let default = moot::llm::models::DEFAULT_MODEL.name;
    moot::llm::models::locate(default).unwrap_or_else(|problem| {
        panic!("{problem}\n(scripts/test pulls it and sets MOOT_TEST_MODEL)")
    })
}
