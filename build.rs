//! Build settings: where the embedded model is built for Linux on x86-64 with llamafile's
//! kernels (llama.cpp's default), llama.cpp's calls to them pass through `llm/local/kernels.rs`.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(moot_kernel_choice)");
    println!("cargo::rerun-if-changed=build.rs");
    // llama-cpp-sys-2 passes GGML_* variables to llama.cpp's CMake; OFF builds no llamafile.
    println!("cargo::rerun-if-env-changed=GGML_LLAMAFILE");
    let local = std::env::var_os("CARGO_FEATURE_LOCAL").is_some();
    let var = |key: &str| std::env::var(key).unwrap_or_default();
    let llamafile = !matches!(
        var("GGML_LLAMAFILE").to_ascii_uppercase().as_str(),
        "OFF" | "0" | "FALSE" | "NO"
    );
    if local
        && llamafile
        && var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ARCH") == "x86_64"
    {
        println!("cargo::rustc-cfg=moot_kernel_choice");
        println!("cargo::rustc-link-arg=-Wl,--wrap=llamafile_sgemm");
        println!("cargo::rustc-link-arg=-Wl,--wrap=ggml_compute_forward_flash_attn_ext");
    }
}
