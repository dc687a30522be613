//! Gathering the shared context K: over this repository, and over a synthetic tree of 100 000
//! files (one in fifty names a key term, one in a hundred is binary, a .gitignore hides a
//! tenth). Targets: under 1 s and under 5 s on CI's two cores. `cargo bench --bench gather`.

use moot::gather::{DEFAULT_BUDGET, Request, gather};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const TOPIC: &str = "We should replace our hand-rolled retry loop with tower's retry layer";
const FILES: usize = 100_000;

fn main() {
    let tree = synthetic_tree();
    let started = std::time::Instant::now();
    let gathered = gather(&Request {
        root: tree.path(),
        topic: TOPIC,
        extra: &[],
        budget: DEFAULT_BUDGET,
    })
    .unwrap();
    eprintln!(
        "gather over {FILES} files: {} ms once, {} searched, {} skipped, {} code lines and {} doc lines kept",
        started.elapsed().as_millis(),
        gathered.files_searched,
        gathered.files_skipped,
        gathered.code.len(),
        gathered.docs.len()
    );
    TREE.set(tree).ok();
    divan::main();
}

static TREE: OnceLock<tempfile::TempDir> = OnceLock::new();

/// 1 000 directories of 100 small files each.
fn synthetic_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".gitignore"), "generated/\n").unwrap();
    for d in 0..FILES / 100 {
        let folder: PathBuf = if d % 10 == 0 {
            dir.path().join("generated").join(format!("d{d}"))
        } else {
            dir.path().join(format!("src/m{d}"))
        };
        std::fs::create_dir_all(&folder).unwrap();
        for f in 0..100 {
            let n = d * 100 + f;
            let content: Vec<u8> = if n % 100 == 7 {
                b"\x7fELF\x00\x01retry\x00binary".to_vec()
            } else if n % 50 == 3 {
                format!("// module {n}\nfn call() {{\n    // the retry loop backs off\n}}\n")
                    .into_bytes()
            } else {
                format!("// module {n}\nfn handle() -> u32 {{ {n} }}\n").into_bytes()
            };
            std::fs::write(folder.join(format!("f{f}.rs")), content).unwrap();
        }
    }
    dir
}

fn repository() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn this_repository() -> usize {
    gather(&Request {
        root: repository(),
        topic: TOPIC,
        extra: &[],
        budget: DEFAULT_BUDGET,
    })
    .unwrap()
    .code
    .len()
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn synthetic_100k_files() -> usize {
    gather(&Request {
        root: TREE.get().unwrap().path(),
        topic: TOPIC,
        extra: &[],
        budget: DEFAULT_BUDGET,
    })
    .unwrap()
    .files_searched
}
