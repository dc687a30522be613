//! llama.cpp as moot-local builds it runs on any x86-64 CPU moot supports: its CPU code picks
//! no instruction set the building machine happens to have.

/// ggml's CPU code is compiled for x86-64-v2 whatever the building machine has: no AVX, no
/// AVX-512, and no AMX (ggml compiles its AMX path only with `-mamx-int8`, which the portable
/// build never passes), so a host whose AMX faults never reaches it.
#[test]
fn llama_cpp_is_built_for_no_cpu_in_particular() {
    // SAFETY: ggml's feature reports read compile-time constants.
    let has = |report: unsafe extern "C" fn() -> std::ffi::c_int| unsafe { report() } != 0;
    use llama_cpp_sys_2 as ggml;
    assert!(has(ggml::ggml_cpu_has_sse3), "built for x86-64-v2 at least");
    for (name, report) in [
        (
            "AMX INT8",
            ggml::ggml_cpu_has_amx_int8 as unsafe extern "C" fn() -> _,
        ),
        ("AVX", ggml::ggml_cpu_has_avx),
        ("AVX2", ggml::ggml_cpu_has_avx2),
        ("AVX-512", ggml::ggml_cpu_has_avx512),
    ] {
        assert!(
            !has(report),
            "llama.cpp was built with {name}: it would not run everywhere"
        );
    }
}
