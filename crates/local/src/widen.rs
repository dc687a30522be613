//! Models stored as Q4_1, a layout llama.cpp's CPU code has no fast matrix path for, are
//! widened once to Q8_0 and read from that copy: on the default model a prompt is read about
//! 1.7× faster and a reply written about 9 % slower, and its next-token distributions stay
//! within a KL divergence of 0.007 of the stored file's. The copy is a cache beside the store:
//! made on first load (about half a second), found again by the file it came from, and any
//! failure to make it means the stored file is loaded as it is.

use super::openings::keep_newest;
use moot_llm::gguf::{self, GgufInfo};
use moot_llm::models;
use std::ffi::CString;
use std::path::{Path, PathBuf};

/// `llama_ftype` of a file mostly in Q4_1, and of the copy it is widened to.
const MOSTLY_Q4_1: u32 = 3;
const MOSTLY_Q8_0: u32 = 7;

/// Larger files are loaded as stored: the copy takes 1.5 times their memory and disk.
const WIDEN_AT_MOST: u64 = 512 << 20;

/// How many copies are kept in all (each about 1.5 times its model); the least recently
/// made go first.
const KEPT_COPIES: usize = 4;

/// The Q8_0 copy of `model` kept in `dir`, made now if there is none; `None` when the model is
/// better loaded as stored (another layout, too large) or the copy cannot be made.
pub(super) fn widened(model: &Path, info: &GgufInfo, dir: &Path, threads: u32) -> Option<PathBuf> {
    let bytes = std::fs::metadata(model).ok()?.len();
    if info.file_type != Some(MOSTLY_Q4_1) || bytes > WIDEN_AT_MOST {
        return None;
    }
    let name = models::widened_name(model);
    let copy = models::widened_copy(model, dir);
    if gguf::inspect(&copy).is_ok_and(|copy| copy.file_type == Some(MOSTLY_Q8_0)) {
        return Some(copy);
    }
    std::fs::create_dir_all(dir).ok()?;
    // Written under a name of its own, then renamed: a run that stops half-way, or another
    // process widening the same model, never leaves a torn copy under the final name.
    let partial = dir.join(format!("{name}.{}.partial", std::process::id()));
    let made = quantize(model, &partial, threads)
        && gguf::inspect(&partial).is_ok_and(|made| made.file_type == Some(MOSTLY_Q8_0))
        && std::fs::rename(&partial, &copy).is_ok();
    let _ = std::fs::remove_file(&partial);
    if !made {
        return None;
    }
    keep_newest(dir, "gguf", KEPT_COPIES, Some(&copy));
    Some(copy)
}

/// llama.cpp's own quantizer, Q4_1 to Q8_0 for every weight it may requantize.
fn quantize(from: &Path, to: &Path, threads: u32) -> bool {
    let (Some(from), Some(to)) = (c_path(from), c_path(to)) else {
        return false;
    };
    // SAFETY: the defaults are plain data llama.cpp fills in.
    let mut params = unsafe { llama_cpp_sys_2::llama_model_quantize_default_params() };
    params.ftype = MOSTLY_Q8_0 as _;
    params.allow_requantize = true;
    params.nthread = threads as i32;
    // SAFETY: both paths are NUL-terminated and outlive the call; `params` is initialised
    // above; the quantizer reads one file and writes the other, and returns 0 on success.
    unsafe { llama_cpp_sys_2::llama_model_quantize(from.as_ptr(), to.as_ptr(), &params) == 0 }
}

fn c_path(path: &Path) -> Option<CString> {
    CString::new(path.to_str()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn header(file_type: Option<u32>) -> GgufInfo {
        GgufInfo {
            architecture: "llama".into(),
            needed_bytes: 0,
            file_type,
        }
    }

    /// A scratch directory holding `model.gguf` with `bytes` in it, and where copies go.
    fn scratch(bytes: &[u8]) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("model.gguf");
        std::fs::write(&model, bytes).unwrap();
        let copies = dir.path().join("widened");
        (dir, model, copies)
    }

    #[test]
    fn only_q4_1_files_are_widened() {
        let (_dir, model, copies) = scratch(b"GGUF");
        for other in [None, Some(2), Some(MOSTLY_Q8_0), Some(15)] {
            assert_eq!(widened(&model, &header(other), &copies, 1), None);
        }
        assert!(!copies.exists(), "nothing is written for them");
    }

    #[test]
    fn a_copy_that_cannot_be_made_leaves_nothing_behind() {
        // Says Q4_1, but is no model: the quantizer fails. (Its complaint goes where a loaded
        // model's log goes, as in the product, not to the test's stderr.)
        super::super::provider::backend().unwrap();
        let (_dir, model, copies) = scratch(b"GGUF not really");
        assert_eq!(
            widened(&model, &header(Some(MOSTLY_Q4_1)), &copies, 1),
            None
        );
        assert_eq!(std::fs::read_dir(&copies).unwrap().count(), 0);
    }

    #[test]
    fn the_newest_copies_are_kept_and_the_one_in_use_always() {
        let dir = tempfile::tempdir().unwrap();
        let at = |seconds: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(seconds);
        let mut paths = Vec::new();
        for (index, seconds) in [50, 10, 40, 20, 30, 5].into_iter().enumerate() {
            let path = dir.path().join(format!("{index}.gguf"));
            std::fs::File::create(&path)
                .unwrap()
                .set_modified(at(seconds))
                .unwrap();
            paths.push(path);
        }
        std::fs::write(dir.path().join("7.1234.partial"), b"").unwrap();
        // The copy just made is the oldest file here, yet stays.
        keep_newest(dir.path(), "gguf", KEPT_COPIES, Some(&paths[5]));
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["0.gguf", "2.gguf", "4.gguf", "5.gguf", "7.1234.partial"]
        );
    }
}
