//! Build settings of the binary: where the embedded model is built (the `local` feature) and
//! moot's kernels stand in for llama.cpp's (`crates/local/kernel_choice.rs`), llama.cpp's calls
//! to them are linked to moot-local's kernels with `--wrap`; the ABI they rely on is checked by
//! moot-local's own build script.

include!("crates/local/kernel_choice.rs");

fn main() {
    // Named whether or not the embedded model is built: tests and benches test for it.
    println!("cargo::rustc-check-cfg=cfg(moot_kernel_choice)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=crates/local/kernel_choice.rs");
    if std::env::var_os("CARGO_FEATURE_LOCAL").is_some() && kernel_choice() {
        for name in WRAPPED {
            println!("cargo::rustc-link-arg=-Wl,--wrap={name}");
        }
    }
}
