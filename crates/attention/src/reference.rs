//! Attention the textbook way in double precision, over numbers stored as a cache stores
//! them: what the kernel is tested against, in this crate and in moot. And the gate every such
//! test passes first (`tested_here`), so that a suite never passes a kernel it did not run.

use super::Format;

/// Whether the kernel runs on this CPU, said on stderr; where it does not, a failure, unless
/// `MOOT_KERNEL_TESTS=skip-missing` says to skip it (which is said too).
pub fn tested_here() -> bool {
    if super::available() {
        eprintln!("kernel tested: attention (AVX-512F, FMA, F16C)");
        return true;
    }
    let skip = std::env::var("MOOT_KERNEL_TESTS").as_deref() == Ok("skip-missing");
    assert!(
        skip,
        "this CPU cannot run the attention kernel (it needs AVX-512F, FMA and F16C); set \
         MOOT_KERNEL_TESTS=skip-missing to skip it"
    );
    eprintln!(
        "kernel NOT tested: attention: this CPU lacks AVX-512F, FMA or F16C (MOOT_KERNEL_TESTS=skip-missing)"
    );
    false
}

/// `tested_here` for the values' product (`values`), which needs AVX2, FMA and F16C.
pub fn values_tested_here() -> bool {
    if super::values::available() {
        eprintln!("kernel tested: attention values (AVX2, FMA, F16C)");
        return true;
    }
    let skip = std::env::var("MOOT_KERNEL_TESTS").as_deref() == Ok("skip-missing");
    assert!(
        skip,
        "this CPU cannot run the values' product (it needs AVX2, FMA and F16C); set \
         MOOT_KERNEL_TESTS=skip-missing to skip it"
    );
    eprintln!(
        "kernel NOT tested: attention values: this CPU lacks AVX2, FMA or F16C (MOOT_KERNEL_TESTS=skip-missing)"
    );
    false
}

/// Negative infinity as an F16 value: a cell the mask hides.
pub const HIDDEN: u16 = 0xFC00;

/// A float as an F16 value (round to nearest), for the test's keys, values and masks.
pub fn half(value: f32) -> u16 {
    if value == f32::NEG_INFINITY {
        return HIDDEN;
    }
    let bits = value.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exponent = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    let mantissa = bits & 0x7f_ffff;
    assert!(exponent < 31, "{value} out of the test's range");
    // Too small for a normal F16 value: zero will do for the test.
    if exponent < 1 {
        return sign;
    }
    let rounded = (mantissa + 0x1000) >> 13;
    sign | (((exponent as u32) << 10) + rounded) as u16
}

pub fn float(half: u16) -> f64 {
    let sign = if half & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = ((half >> 10) & 0x1f) as i32;
    let mantissa = (half & 0x3ff) as f64;
    if exponent == 0x1f {
        return sign * f64::INFINITY;
    }
    if exponent == 0 {
        return sign * mantissa * 2f64.powi(-24);
    }
    sign * (1.0 + mantissa / 1024.0) * 2f64.powi(exponent - 15)
}

/// A value in -1..1 from a counter (a small generator, so the test needs no crate).
pub fn noise(seed: &mut u64) -> f32 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
}

/// A cache's rows of `values` (each `per_cell` numbers) stored in `format`: the bytes, each
/// row's length in bytes, and the numbers as stored, in double precision.
pub fn store(values: &[f32], per_cell: usize, format: Format) -> (Vec<u8>, usize, Vec<f64>) {
    let mut bytes = Vec::new();
    let mut stored = Vec::new();
    for chunk in values.chunks(match format {
        Format::F16 => 1,
        Format::Q8_0 => 32,
    }) {
        match format {
            Format::F16 => {
                let h = half(chunk[0]);
                bytes.extend_from_slice(&h.to_le_bytes());
                stored.push(float(h));
            }
            Format::Q8_0 => {
                let largest = chunk.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                let scale = half(largest / 127.0);
                bytes.extend_from_slice(&scale.to_le_bytes());
                for value in chunk {
                    let quant = if float(scale) == 0.0 {
                        0
                    } else {
                        (*value as f64 / float(scale)).round().clamp(-127.0, 127.0) as i8
                    };
                    bytes.push(quant as u8);
                    stored.push(float(scale) * quant as f64);
                }
            }
        }
    }
    let row = bytes.len() / (values.len() / per_cell);
    (bytes, row, stored)
}

/// Attention in double precision, the textbook way, over numbers as stored (`per_cell` a
/// cell, the head's first at `head`).
#[allow(clippy::too_many_arguments)]
pub fn reference(
    query: &[f32],
    mask: &[u16],
    keys: &[f64],
    values: &[f64],
    per_cell: usize,
    head: usize,
    dim: usize,
    scale: f32,
) -> Vec<f64> {
    let cells = mask.len();
    let scores: Vec<f64> = (0..cells)
        .map(|cell| {
            let dot: f64 = (0..dim)
                .map(|i| query[i] as f64 * keys[cell * per_cell + head + i])
                .sum();
            dot * scale as f64 + float(mask[cell])
        })
        .collect();
    let largest = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if largest == f64::NEG_INFINITY {
        return vec![0.0; dim];
    }
    let weights: Vec<f64> = scores.iter().map(|s| (s - largest).exp()).collect();
    let sum: f64 = weights.iter().sum();
    (0..dim)
        .map(|i| {
            (0..cells)
                .map(|cell| weights[cell] * values[cell * per_cell + head + i])
                .sum::<f64>()
                / sum
        })
        .collect()
}
