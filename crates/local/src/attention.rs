//! Which kernel computes a layer's attention (llama.cpp's flash-attention operation): moot's
//! own (the `moot-attention` crate) over F16 or Q8_0 keys and values of 64 or 128 a head, for a
//! step and a prompt alike; llama.cpp's for anything else.
//!
//! The linker's `--wrap`, which `build.rs` sets where this is built, sends llama.cpp's calls of
//! `ggml_compute_forward_flash_attn_ext` here first. Every compute thread calls it for the
//! same operation; each computes its own share of the query heads, as llama.cpp's kernel does,
//! and the graph waits for all of them before the next operation.

use super::kernels::ComputeParams;
use super::q8_0_step::share;
use llama_cpp_sys_2::{GGML_TYPE_F16, GGML_TYPE_F32, GGML_TYPE_Q8_0, ggml_tensor};
use moot_attention::Format;
use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

static TO_MOOT: AtomicU64 = AtomicU64::new(0);

/// How many operations moot's kernel computed since the process started (each thread's
/// share counted once).
pub(super) fn computed() -> u64 {
    TO_MOOT.load(Ordering::Relaxed)
}

/// Whether this build computes attention over heads of `dim` values with moot's kernel, so
/// that a context should ask llama.cpp for flash attention over Q8_0 keys and values: without
/// the kernel, llama.cpp's own for a step would be the slowest part of it.
pub(super) fn takes(dim: usize) -> bool {
    moot_attention::takes(dim)
}

/// The wrapper's address, kept linked by a use in the provider (as `kernels::linked`).
pub(super) fn linked() -> usize {
    __wrap_ggml_compute_forward_flash_attn_ext as *const () as usize
}

unsafe extern "C" {
    /// llama.cpp's `ggml_compute_forward_flash_attn_ext`, by the name `--wrap` gives it.
    fn __real_ggml_compute_forward_flash_attn_ext(params: *const c_void, dst: *mut ggml_tensor);
}

/// What llama.cpp calls to compute a flash-attention operation.
///
/// # Safety
/// Only llama.cpp calls this, with the arguments it would pass to the function it wraps.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __wrap_ggml_compute_forward_flash_attn_ext(
    params: *const c_void,
    dst: *mut ggml_tensor,
) {
    // SAFETY: llama.cpp's own arguments, read as its headers lay them out.
    let params_read = unsafe { &*(params as *const ComputeParams) };
    // ggml's reference run gets ggml's own kernel.
    // SAFETY: as above.
    let taken = !params_read.use_ref && unsafe { attend(params_read, &*dst) };
    if !taken {
        // SAFETY: the arguments are llama.cpp's own, passed on unchanged.
        unsafe { __real_ggml_compute_forward_flash_attn_ext(params, dst) };
    }
}

/// Each thread's scratch: scores, and a group's row pointers.
#[derive(Default)]
struct Scratch {
    scores: Vec<f32>,
    queries: Vec<*const f32>,
    masks: Vec<*const u16>,
    outputs: Vec<*mut f32>,
}

impl Scratch {
    /// Empties the rows of the last group, keeping their room, for the next.
    fn begin_group(&mut self) {
        self.queries.clear();
        self.masks.clear();
        self.outputs.clear();
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

/// How moot's kernel reads a cache of a ggml type, where it reads that type.
fn format(ggml_type: llama_cpp_sys_2::ggml_type) -> Option<Format> {
    match ggml_type {
        GGML_TYPE_F16 => Some(Format::F16),
        GGML_TYPE_Q8_0 => Some(Format::Q8_0),
        _ => None,
    }
}

/// What ggml gives as the stride between a format's numbers (`nb[0]`): a block's bytes for a
/// block format.
fn element_bytes(format: Format) -> usize {
    match format {
        Format::F16 => 2,
        Format::Q8_0 => 34,
    }
}

/// A tensor's sizes and strides as `usize`s (ggml's are never negative).
fn sizes(tensor: &ggml_tensor) -> ([usize; 4], [usize; 4]) {
    (
        tensor.ne.map(|n| usize::try_from(n).unwrap_or(0)),
        tensor.nb,
    )
}

/// Whether moot's kernel takes an operation of these shapes (the sizes and strides of its
/// query, key, value and output, and of its mask if it has one): a head size it computes,
/// contiguous F32 rows in and out, keys and values alike and packed as their formats say,
/// query heads and streams that share key heads evenly, and a mask that covers every cell
/// and token.
fn shapes_fit(
    [(q_ne, q_nb), (k_ne, k_nb), (v_ne, v_nb), (d_ne, d_nb)]: [([usize; 4], [usize; 4]); 4],
    mask: Option<([usize; 4], [usize; 4])>,
    [key_format, value_format]: [Format; 2],
) -> bool {
    let dim = k_ne[0];
    let [_, tokens, heads, streams] = q_ne;
    let [_, cells, key_heads, key_streams] = k_ne;
    moot_attention::takes(dim)
        && q_ne[0] == dim
        && v_ne == k_ne
        && d_ne == [dim, heads, tokens, streams]
        && q_nb[0] == 4
        && k_nb[0] == element_bytes(key_format)
        && v_nb[0] == element_bytes(value_format)
        && d_nb[0] == 4
        && key_heads > 0
        && key_streams > 0
        && heads % key_heads == 0
        && streams % key_streams == 0
        && mask.is_none_or(|(ne, nb)| {
            nb[0] == 2 && ne[0] >= cells && ne[1] >= tokens && ne[2] > 0 && ne[3] > 0
        })
}

/// Computes this thread's share of the operation `dst` with moot's kernel and returns true,
/// or returns false, having touched nothing, where the kernel does not take it.
///
/// # Safety
/// `dst` is a flash-attention operation whose sources llama.cpp made, for these `params`.
unsafe fn attend(params: &ComputeParams, dst: &ggml_tensor) -> bool {
    let [query, key, value, mask, sinks] = [0, 1, 2, 3, 4].map(|i| dst.src[i]);
    if query.is_null() || key.is_null() || value.is_null() || !sinks.is_null() {
        return false;
    }
    // SAFETY: sources llama.cpp made for the operation.
    let (query, key, value) = unsafe { (&*query, &*key, &*value) };
    // SAFETY: as above; a null mask is none.
    let mask = unsafe { mask.as_ref() };
    let mask_type_fits = mask.is_none_or(|mask| mask.type_ == GGML_TYPE_F16);
    // Its data, sizes and strides, read once.
    let mask = mask.map(|mask| (mask.data as *const u8, sizes(mask)));
    let [scale, max_bias, softcap] = [0, 1, 2].map(|i| f32::from_bits(dst.op_params[i] as u32));
    let (Some(key_format), Some(value_format)) = (format(key.type_), format(value.type_)) else {
        return false;
    };
    if query.type_ != GGML_TYPE_F32
        || dst.type_ != GGML_TYPE_F32
        || !mask_type_fits
        || max_bias != 0.0
        || softcap != 0.0
    {
        return false;
    }
    let shapes = [sizes(query), sizes(key), sizes(value), sizes(dst)];
    if !shapes_fit(
        shapes,
        mask.map(|(_, sizes)| sizes),
        [key_format, value_format],
    ) {
        return false;
    }
    let [(q_ne, q_nb), (k_ne, k_nb), (_, v_nb), (_, d_nb)] = shapes;
    let dim = k_ne[0];
    let [_, tokens, heads, streams] = q_ne;
    let [_, cells, key_heads, key_streams] = k_ne;
    let per_key_head = heads / key_heads;
    let per_key_stream = streams / key_streams;
    let thread = params.thread.max(0) as usize;
    let threads = params.threads.max(1) as usize;
    // A thread's share is a run of (stream, query head) pairs; the pairs that read the same key
    // head are computed together, so that it reads that head's cells once.
    let mine = share(streams * heads, thread, threads);
    SCRATCH.with_borrow_mut(|scratch| {
        let mut unit = mine.start;
        while unit < mine.end {
            let (stream, first_head) = (unit / heads, unit % heads);
            let key_head = first_head / per_key_head;
            let end_head = ((key_head + 1) * per_key_head).min(first_head + (mine.end - unit));
            scratch.begin_group();
            // Token by token, so that a block of a prompt's rows spans few tokens and reads
            // only the cells they see (see `moot_attention::attend`).
            for token in 0..tokens {
                for head in first_head..end_head {
                    // SAFETY: within the tensors' sizes, at their own strides.
                    unsafe {
                        scratch.queries.push(
                            (query.data as *const u8)
                                .add(token * q_nb[1] + head * q_nb[2] + stream * q_nb[3])
                                as *const f32,
                        );
                        scratch
                            .masks
                            .push(mask.map_or(std::ptr::null(), |(data, (ne, nb))| {
                                data.add(
                                    token * nb[1]
                                        + (head % ne[2]) * nb[2]
                                        + (stream % ne[3]) * nb[3],
                                ) as *const u16
                            }));
                        scratch.outputs.push(
                            (dst.data as *mut u8)
                                .add(head * d_nb[1] + token * d_nb[2] + stream * d_nb[3])
                                as *mut f32,
                        );
                    }
                }
            }
            let key_stream = stream / per_key_stream;
            // SAFETY: within the tensors' sizes, at their own strides.
            let (keys, values) = unsafe {
                (
                    (key.data as *const u8).add(key_head * k_nb[2] + key_stream * k_nb[3]),
                    (value.data as *const u8).add(key_head * v_nb[2] + key_stream * v_nb[3]),
                )
            };
            let group = moot_attention::Group {
                queries: &scratch.queries,
                masks: &scratch.masks,
                outputs: &scratch.outputs,
                keys,
                key_stride: k_nb[1],
                key_format,
                values,
                value_stride: v_nb[1],
                value_format,
                cells,
                dim,
                scale,
            };
            // SAFETY: the shapes were checked above: every row and cell lies in its tensor,
            // and the output is llama.cpp's own tensor for the operation.
            unsafe { moot_attention::attend(&group, &mut scratch.scores) };
            unit += end_head - first_head;
        }
    });
    if thread == 0 {
        TO_MOOT.fetch_add(1, Ordering::Relaxed);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::{ComputeParams, GGML_TYPE_F16, GGML_TYPE_F32, attend, ggml_tensor};
    use moot_attention::reference::{HIDDEN, float, half, noise, reference};

    /// A tensor of `ggml_type` with these sizes and strides over `data`, as llama.cpp's views
    /// describe their operands.
    fn tensor(
        ggml_type: llama_cpp_sys_2::ggml_type,
        ne: [usize; 4],
        nb: [usize; 4],
        data: *mut u8,
    ) -> ggml_tensor {
        // SAFETY: a plain C struct of numbers and pointers, for which zeros are valid.
        let mut tensor: ggml_tensor = unsafe { std::mem::zeroed() };
        tensor.type_ = ggml_type;
        tensor.ne = ne.map(|n| n as i64);
        tensor.nb = nb;
        tensor.data = data as *mut std::ffi::c_void;
        tensor
    }

    #[test]
    fn an_operation_is_computed_head_by_head_where_llama_cpp_lays_its_tensors_out() {
        if !moot_attention::reference::tested_here() {
            return;
        }
        // Two streams (sequences), two tokens each, four query heads over two key heads.
        let (dim, tokens, heads, key_heads, streams, cells) = (64, 2, 4, 2, 2, 19);
        let mut seed = 11;
        let mut queries: Vec<f32> = (0..dim * tokens * heads * streams)
            .map(|_| noise(&mut seed) * 3.0)
            .collect();
        // Each cell's row holds both key heads; each stream has its own cells.
        let numbers = |seed: &mut u64| -> Vec<u16> {
            (0..dim * key_heads * cells * streams)
                .map(|_| half(noise(seed)))
                .collect()
        };
        let (mut keys, mut values) = (numbers(&mut seed), numbers(&mut seed));
        // The second token sees every cell, the first all but the last two; shared by streams.
        let mut mask: Vec<u16> = (0..tokens * cells)
            .map(|i| {
                if i < cells && i >= cells - 2 {
                    HIDDEN
                } else {
                    half(0.0)
                }
            })
            .collect();
        // The output's rows are padded: ggml's views may stride them, and what lies between
        // them is not the kernel's to write.
        let out_row = dim + 3;
        let mut out = vec![f32::NAN; out_row * heads * tokens * streams];
        let row = dim * key_heads * 2;
        let query = tensor(
            GGML_TYPE_F32,
            [dim, tokens, heads, streams],
            [4, dim * 4, dim * 4 * tokens, dim * 4 * tokens * heads],
            queries.as_mut_ptr() as *mut u8,
        );
        let cache = |data: &mut Vec<u16>| {
            tensor(
                GGML_TYPE_F16,
                [dim, cells, key_heads, streams],
                [2, row, dim * 2, row * cells],
                data.as_mut_ptr() as *mut u8,
            )
        };
        let (key, value) = (cache(&mut keys), cache(&mut values));
        let mask_tensor = tensor(
            GGML_TYPE_F16,
            [cells, tokens, 1, 1],
            [2, cells * 2, cells * 2 * tokens, cells * 2 * tokens],
            mask.as_mut_ptr() as *mut u8,
        );
        let scale = 0.125f32;
        let mut dst = tensor(
            GGML_TYPE_F32,
            [dim, heads, tokens, streams],
            [
                4,
                out_row * 4,
                out_row * 4 * heads,
                out_row * 4 * heads * tokens,
            ],
            out.as_mut_ptr() as *mut u8,
        );
        dst.op_params[0] = scale.to_bits() as i32;
        let sources = [&query, &key, &value, &mask_tensor];
        for (i, source) in sources.iter().enumerate() {
            dst.src[i] = *source as *const ggml_tensor as *mut ggml_tensor;
        }
        // Two threads, one after the other: their shares cover every head once.
        for thread in 0..2 {
            // SAFETY: every operand above is as large as its sizes and strides say.
            let taken = unsafe { attend(&ComputeParams::thread_of(thread, 2), &dst) };
            assert!(taken);
        }
        for stream in 0..streams {
            for token in 0..tokens {
                for head in 0..heads {
                    let key_head = head / 2;
                    let stored = |data: &[u16]| -> Vec<f64> {
                        (0..cells)
                            .flat_map(|cell| {
                                let at = (stream * cells + cell) * dim * key_heads + key_head * dim;
                                data[at..at + dim].iter().map(|h| float(*h))
                            })
                            .collect()
                    };
                    let q = (stream * heads + head) * tokens * dim + token * dim;
                    let expected = reference(
                        &queries[q..q + dim],
                        &mask[token * cells..(token + 1) * cells],
                        &stored(&keys),
                        &stored(&values),
                        dim,
                        0,
                        dim,
                        scale,
                    );
                    let at = ((stream * tokens + token) * heads + head) * out_row;
                    assert!(out[at + dim..at + out_row].iter().all(|v| v.is_nan()));
                    for (got, want) in out[at..at + dim].iter().zip(&expected) {
                        assert!(
                            (*got as f64 - want).abs() < 2e-5,
                            "stream {stream}, token {token}, head {head}: {got} against {want}"
                        );
                    }
                }
            }
        }
        // What the kernel does not compute is left to llama.cpp, untouched.
        out.fill(f32::NAN);
        let mut biased = tensor(
            GGML_TYPE_F32,
            dst.ne.map(|n| n as usize),
            dst.nb,
            dst.data as *mut u8,
        );
        biased.src = dst.src;
        biased.op_params = dst.op_params;
        biased.op_params[1] = 8.0f32.to_bits() as i32;
        let mut wide = biased;
        wide.op_params[1] = 0;
        let f32_keys = tensor(
            GGML_TYPE_F32,
            key.ne.map(|n| n as usize),
            key.nb,
            key.data as *mut u8,
        );
        wide.src[1] = &f32_keys as *const ggml_tensor as *mut ggml_tensor;
        for declined in [&biased, &wide] {
            // SAFETY: as above; nothing is read when the operation is declined.
            assert!(!unsafe { attend(&ComputeParams::thread_of(0, 1), declined) });
        }
        assert!(
            out.iter().all(|v| v.is_nan()),
            "declined operations wrote nothing"
        );
    }
}
