// Whether moot's kernels stand in for llama.cpp's: a build for Linux on x86-64 with llamafile's
// kernels (llama.cpp's default; GGML_LLAMAFILE=OFF builds none). Shared, by `include!`, by this
// crate's build script (which compiles the kernels and checks the ABI they rely on) and the
// binary's (which links them in with `--wrap`), so the two cannot disagree.

/// Whether this build puts moot's kernels in llama.cpp's place (the caller declares the
/// `moot_kernel_choice` cfg this sets); says cargo what to re-run on.
fn kernel_choice() -> bool {
    // llama-cpp-sys-2 passes GGML_* variables to llama.cpp's CMake; OFF builds no llamafile.
    println!("cargo::rerun-if-env-changed=GGML_LLAMAFILE");
    let var = |key: &str| std::env::var(key).unwrap_or_default();
    let llamafile = !matches!(
        var("GGML_LLAMAFILE").to_ascii_uppercase().as_str(),
        "OFF" | "0" | "FALSE" | "NO"
    );
    let chosen = llamafile
        && var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ARCH") == "x86_64";
    if chosen {
        println!("cargo::rustc-cfg=moot_kernel_choice");
    }
    chosen
}

/// The two ggml functions moot's kernels stand in for, linked to `__wrap_<name>` in moot-local.
const WRAPPED: [&str; 2] = ["llamafile_sgemm", "ggml_compute_forward_flash_attn_ext"];
