//! Names the CPU features the kernel is built for, once: `q8_0_kernel` (x86-64 with AVX2, FMA
//! and F16C, which the kernel needs) and `q8_0_vnni` (AVX-512 VNNI and VL besides, for its byte
//! dot product), so the crate tests a name rather than repeating the list.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(q8_0_kernel, q8_0_vnni)");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let has = |wanted: &[&str]| {
        wanted
            .iter()
            .all(|feature| features.split(',').any(|f| f == *feature))
    };
    if arch == "x86_64" && has(&["avx2", "fma", "f16c"]) {
        println!("cargo::rustc-cfg=q8_0_kernel");
        if has(&["avx512vnni", "avx512vl"]) {
            println!("cargo::rustc-cfg=q8_0_vnni");
        }
    }
}
