//! Build settings of the embedded engine: where moot's kernels stand in for llama.cpp's
//! (`kernel_choice.rs`), the private parts of ggml those calls rely on are checked against the
//! headers of the llama.cpp that was built (`src/ggml_abi.c`), so an upgrade that changes them
//! stops the build; and this crate's own tests and benches link the kernels in with `--wrap`
//! (the binary's build script does the same for moot).

include!("kernel_choice.rs");

fn main() {
    println!("cargo::rustc-check-cfg=cfg(moot_kernel_choice)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=kernel_choice.rs");
    if kernel_choice() {
        for name in WRAPPED {
            println!("cargo::rustc-link-arg=-Wl,--wrap={name}");
        }
        check_ggml_abi();
    }
}

/// Compiles `src/ggml_abi.c` against the private headers of the llama.cpp that
/// llama-cpp-sys-2 built, found through the CMake cache of its build (`ggml_cmake_dir` is the
/// metadata it publishes): the exact sources, wherever cargo keeps them.
fn check_ggml_abi() {
    let check = "src/ggml_abi.c";
    println!("cargo::rerun-if-changed={check}");
    println!("cargo::rerun-if-env-changed=DEP_LLAMA_GGML_CMAKE_DIR");
    let Some(cmake_dir) = std::env::var_os("DEP_LLAMA_GGML_CMAKE_DIR") else {
        panic!(
            "llama-cpp-sys-2 did not say where it built llama.cpp (DEP_LLAMA_GGML_CMAKE_DIR), so \
             the ABI moot's kernels rely on cannot be checked; see the pin in Cargo.toml"
        );
    };
    // The build's output dir holds the CMake dir (`<out>/lib…/cmake/ggml`) and, beside it,
    // the CMake build with its cache (`<out>/build/CMakeCache.txt`).
    let cache = std::path::Path::new(&cmake_dir)
        .ancestors()
        .map(|dir| dir.join("build").join("CMakeCache.txt"))
        .find(|cache| cache.is_file())
        .unwrap_or_default();
    let sources = std::fs::read_to_string(&cache)
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("CMAKE_HOME_DIRECTORY:INTERNAL="))
                .map(std::path::PathBuf::from)
        })
        .unwrap_or_else(|| {
            panic!(
                "cannot read where llama.cpp's sources are from {}; the ABI check needs them",
                cache.display()
            )
        });
    let ggml = sources.join("ggml");
    cc::Build::new()
        .file(check)
        .include(ggml.join("include"))
        .include(ggml.join("src"))
        .include(ggml.join("src").join("ggml-cpu"))
        .std("c11")
        .warnings(false)
        .cargo_metadata(false)
        .compile_intermediates();
}
