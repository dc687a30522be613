//! Names the CPU features the kernel is built for, once: `attention_kernel` (x86-64 with
//! AVX-512F, FMA and F16C), so the crate tests a name rather than repeating the list.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(attention_kernel)");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let has = |wanted: &[&str]| {
        wanted
            .iter()
            .all(|feature| features.split(',').any(|f| f == *feature))
    };
    if arch == "x86_64" && has(&["avx512f", "fma", "f16c"]) {
        println!("cargo::rustc-cfg=attention_kernel");
    }
}
