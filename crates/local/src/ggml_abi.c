/* The private parts of ggml that moot's kernels rely on, checked against the headers of the
 * llama.cpp that llama-cpp-sys-2 built (build.rs compiles this, and links nothing of it): a
 * change in an upgrade stops the build here instead of corrupting memory at run time.
 *
 * Mirrored in Rust: `ComputeParams` (src/kernels.rs), the wrapped `llamafile_sgemm`
 * and `ggml_compute_forward_flash_attn_ext` (kernels.rs, attention.rs), and the thread pool's
 * `ggml_barrier`, `ggml_threadpool_chunk_set` and `ggml_threadpool_chunk_add` (kernels.rs).
 * When one of these fails, read the header named beside it, bring the Rust mirror in line,
 * then the numbers here. */

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "ggml-cpu-impl.h"
#include "ops.h"
#include "llamafile/sgemm.h"

#define SAME_TYPE(a, b) __builtin_types_compatible_p(__typeof__(a), b)

/* ggml-cpu-impl.h: struct ggml_compute_params, as `ComputeParams` lays it out. */
_Static_assert(offsetof(struct ggml_compute_params, ith) == 0, "ggml_compute_params.ith moved (ggml-cpu-impl.h)");
_Static_assert(offsetof(struct ggml_compute_params, nth) == 4, "ggml_compute_params.nth moved (ggml-cpu-impl.h)");
_Static_assert(offsetof(struct ggml_compute_params, wsize) == 8, "ggml_compute_params.wsize moved (ggml-cpu-impl.h)");
_Static_assert(offsetof(struct ggml_compute_params, wdata) == 16, "ggml_compute_params.wdata moved (ggml-cpu-impl.h)");
_Static_assert(offsetof(struct ggml_compute_params, threadpool) == 24, "ggml_compute_params.threadpool moved (ggml-cpu-impl.h)");
_Static_assert(offsetof(struct ggml_compute_params, use_ref) == 32, "ggml_compute_params.use_ref moved (ggml-cpu-impl.h)");
_Static_assert(sizeof(((struct ggml_compute_params *) 0)->ith) == 4, "ggml_compute_params.ith is no longer an int");
_Static_assert(sizeof(((struct ggml_compute_params *) 0)->use_ref) == 1, "ggml_compute_params.use_ref is no longer a bool");
_Static_assert(sizeof(struct ggml_compute_params) == 40, "ggml_compute_params changed size (ggml-cpu-impl.h)");

/* llamafile/sgemm.h: the function `__wrap_llamafile_sgemm` stands in for. */
_Static_assert(SAME_TYPE(&llamafile_sgemm,
                         bool (*)(const struct ggml_compute_params *, int64_t, int64_t, int64_t,
                                  const void *, int64_t, const void *, int64_t, void *, int64_t,
                                  int, int, int)),
               "llamafile_sgemm's signature changed (llamafile/sgemm.h)");

/* ops.h: the function `__wrap_ggml_compute_forward_flash_attn_ext` stands in for. */
_Static_assert(SAME_TYPE(&ggml_compute_forward_flash_attn_ext,
                         void (*)(const struct ggml_compute_params *, struct ggml_tensor *)),
               "ggml_compute_forward_flash_attn_ext's signature changed (ops.h)");

/* ggml-cpu-impl.h: the thread pool's calls moot's shared-out products make. */
_Static_assert(SAME_TYPE(&ggml_barrier, void (*)(struct ggml_threadpool *)),
               "ggml_barrier's signature changed (ggml-cpu-impl.h)");
_Static_assert(SAME_TYPE(&ggml_threadpool_chunk_set, void (*)(struct ggml_threadpool *, int)),
               "ggml_threadpool_chunk_set's signature changed (ggml-cpu-impl.h)");
_Static_assert(SAME_TYPE(&ggml_threadpool_chunk_add, int (*)(struct ggml_threadpool *, int)),
               "ggml_threadpool_chunk_add's signature changed (ggml-cpu-impl.h)");

/* ggml.h: the operation moot's attention reads (its op_params and sources), by the numbers
 * attention.rs takes them. */
_Static_assert(GGML_MAX_SRC >= 5, "ggml_tensor has fewer sources than flash attention's five (ggml.h)");
_Static_assert(GGML_MAX_OP_PARAMS >= 12, "ggml_tensor's op_params shrank (ggml.h)");
