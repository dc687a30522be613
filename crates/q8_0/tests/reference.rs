//! moot's Q8_0 kernels against a reference product in double precision, at every level this
//! CPU runs. A level the CPU lacks fails its test unless `MOOT_KERNEL_TESTS=skip-missing` says
//! to skip it, and says so: a suite never passes a kernel it did not run.

use std::ops::Range;
use std::ptr::NonNull;
use std::sync::Arc;

use moot_q8_0::{
    Block, Level, MOST_BLOCKS, MOST_COLUMNS, PACKED_ALIGNMENT, Packed, Product, QUANTS,
    multiply_at, multiply_packed, share, takes, tested_here,
};

/// IEEE half precision to single, in software, for the reference product.
fn half(bits: u16) -> f32 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let fraction = f32::from(bits & 0x3ff);
    match exponent {
        0 => sign * fraction * 2f32.powi(-24),
        _ => sign * (1.0 + fraction / 1024.0) * 2f32.powi(exponent - 15),
    }
}

/// A small deterministic generator, so a failure reproduces.
struct Numbers(u64);

impl Numbers {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn block(&mut self) -> Block {
        // Scales as a model's: normal halves between 2^-10 and 2^1, of either sign.
        let exponent = 5 + (self.next() % 12) as u16;
        let scale = (self.next() as u16 & 0x8000) | (exponent << 10) | (self.next() as u16 & 0x3ff);
        let mut quants = [0i8; QUANTS];
        for value in &mut quants {
            *value = ((self.next() % 255) as i16 - 127) as i8;
        }
        Block { scale, quants }
    }
}

/// The product of a row and a column in double precision, and the sum of its products'
/// magnitudes (what rounding errors scale with: partial sums cancel).
fn reference(weights: &[Block], columns: &[Block], blocks: usize) -> (f64, f64) {
    let (mut sum, mut magnitude) = (0.0, 0.0);
    for (weight, column) in weights.iter().zip(columns).take(blocks) {
        let scale = f64::from(half(weight.scale)) * f64::from(half(column.scale));
        for (&w, &c) in weight.quants.iter().zip(&column.quants) {
            let term = f64::from(i32::from(w) * i32::from(c)) * scale;
            sum += term;
            magnitude += term.abs();
        }
    }
    (sum, magnitude)
}

/// A product's shape: `rows` rows of `blocks` blocks, `weight_stride` blocks apart, by
/// `column_count` columns.
struct Shape {
    rows: usize,
    blocks: usize,
    weight_stride: usize,
    column_count: usize,
}

impl Shape {
    fn new(rows: usize, blocks: usize, weight_stride: usize, column_count: usize) -> Shape {
        Shape {
            rows,
            blocks,
            weight_stride,
            column_count,
        }
    }
}

/// Makes `shape.column_count` columns (strides wider than a row, as the attention cache's
/// views have), has `compute` multiply `weights` by them, and checks every result against
/// the reference product and that what lies between the columns' results is left alone.
fn check_product(
    numbers: &mut Numbers,
    weights: &[Block],
    shape: &Shape,
    compute: impl Fn(&Product),
) {
    let Shape {
        rows,
        blocks,
        weight_stride,
        column_count,
    } = *shape;
    let column_stride = blocks + 1;
    let columns: Vec<Block> = (0..column_count * column_stride)
        .map(|_| numbers.block())
        .collect();
    let out_stride = rows + 3;
    let mut out = vec![f32::NAN; column_count * out_stride];
    compute(&Product {
        weights: weights.as_ptr(),
        weight_stride,
        columns: columns.as_ptr(),
        column_stride,
        column_count,
        blocks,
        out: out.as_mut_ptr(),
        out_stride,
    });
    for column in 0..column_count {
        for row in 0..rows {
            let (expected, magnitude) = reference(
                &weights[row * weight_stride..],
                &columns[column * column_stride..],
                blocks,
            );
            let got = f64::from(out[column * out_stride + row]);
            assert!(
                (got - expected).abs() <= 1e-6 * magnitude,
                "{rows} rows of {blocks} blocks, {column_count} columns: row {row}, column \
                 {column}: {got} against {expected}"
            );
        }
        assert!(
            out[column * out_stride + rows..(column + 1) * out_stride]
                .iter()
                .all(|value| value.is_nan())
        );
    }
}

#[test]
fn every_column_count_matches_the_reference_product() {
    let levels: Vec<Level> = [Level::Avx2, Level::Vnni]
        .into_iter()
        .filter(|level| tested_here(*level))
        .collect();
    let mut numbers = Numbers(0x9e37_79b9_7f4a_7c15);
    // Rows split unevenly between two threads; strides wider than a row,
    // as the attention cache's views have.
    for (rows, blocks, padding) in [(1, 1, 0), (7, 18, 0), (13, 2, 4), (9, 48, 1), (5, 256, 0)] {
        let weight_stride = blocks + padding;
        let weights: Vec<Block> = (0..rows * weight_stride).map(|_| numbers.block()).collect();
        for column_count in 1..=MOST_COLUMNS {
            assert_eq!(takes(column_count, blocks), !levels.is_empty());
            let shape = Shape::new(rows, blocks, weight_stride, column_count);
            check_product(&mut numbers, &weights, &shape, |product| {
                for &level in &levels {
                    for thread in 0..2 {
                        // SAFETY: `check_product` holds every row, column and output named,
                        // and the CPU runs `level`.
                        unsafe { multiply_at(level, product, share(rows, thread, 2)) };
                    }
                }
            });
        }
    }
}

#[test]
fn packed_weights_match_the_reference_product() {
    let packs = tested_here(Level::Vnni);
    assert_eq!(Packed::built(), packs);
    let mut numbers = Numbers(0x2545_f491_4f6c_dd1d);
    for (rows, blocks, padding) in [(8, 1, 0), (16, 18, 0), (24, 48, 3), (8, 256, 0)] {
        let weight_stride = blocks + padding;
        let weights: Vec<Block> = (0..rows * weight_stride).map(|_| numbers.block()).collect();
        // Packed in memory of its own, and in the caller's (as a model's copies are, in its
        // arena), which must be aligned.
        // SAFETY: `weights` holds every row named.
        let own = unsafe { Packed::new(weights.as_ptr(), rows, blocks, weight_stride) };
        let in_callers = Packed::bytes_for(rows, blocks).and_then(|bytes| {
            let mut buffer = vec![0u8; bytes + 2 * PACKED_ALIGNMENT];
            // Written through this pointer alone; the vector's own buffer, which moving the
            // vector into its owner does not move.
            let start = buffer.as_mut_ptr() as usize;
            let memory = Arc::new(buffer);
            let aligned = start.next_multiple_of(PACKED_ALIGNMENT);
            let at = |address: usize| NonNull::new(address as *mut u8).unwrap();
            // SAFETY (both): `weights` holds every row named; the memory is the vector's,
            // at least `bytes` from there, used for nothing else and kept by the copy.
            let misaligned = unsafe {
                Packed::new_in(
                    weights.as_ptr(),
                    rows,
                    blocks,
                    weight_stride,
                    at(aligned + 1),
                    memory.clone(),
                )
            };
            assert!(misaligned.is_none(), "memory not aligned for tiles");
            unsafe {
                Packed::new_in(
                    weights.as_ptr(),
                    rows,
                    blocks,
                    weight_stride,
                    at(aligned),
                    memory,
                )
            }
        });
        assert_eq!(own.is_some(), in_callers.is_some());
        for packed in [own, in_callers] {
            let Some(packed) = packed else {
                assert!(
                    !Packed::built(),
                    "a build with the packed kernel packs {rows} rows"
                );
                continue;
            };
            assert_eq!(packed.groups(), rows / moot_q8_0::PACKED_ROWS);
            assert_eq!(
                packed.bytes(),
                rows * blocks * std::mem::size_of::<Block>(),
                "no larger than the weights"
            );
            // A step's one to four columns, and a prompt's many, four at a time.
            for column_count in (1..=MOST_COLUMNS).chain([5, 8, 11]) {
                let shape = Shape::new(rows, blocks, weight_stride, column_count);
                check_product(&mut numbers, &weights, &shape, |product| {
                    // Groups shared unevenly, as three threads would.
                    for thread in 0..3 {
                        // SAFETY: `check_product` holds every column and output named, and the
                        // shares lie within the packed groups.
                        unsafe {
                            multiply_packed(&packed, product, share(packed.groups(), thread, 3))
                        };
                    }
                });
            }
        }
    }
    // What the packed kernel cannot take is left to the row kernel.
    let weights: Vec<Block> = (0..12 * 300).map(|_| numbers.block()).collect();
    // SAFETY: `weights` holds every row named in each call.
    unsafe {
        assert!(
            Packed::new(weights.as_ptr(), 12, 18, 18).is_none(),
            "12 rows"
        );
        assert!(
            Packed::new(weights.as_ptr(), 8, 257, 300).is_none(),
            "rows too long"
        );
        assert!(
            Packed::new(weights.as_ptr(), 8, 18, 17).is_none(),
            "rows overlap"
        );
    }
}

#[test]
fn wide_products_and_long_rows_are_left_to_llama_cpp() {
    assert!(!takes(0, 18));
    assert!(!takes(MOST_COLUMNS + 1, 18));
    assert!(!takes(2, MOST_BLOCKS + 1));
    assert!(!takes(2, 0));
}

#[test]
fn the_threads_shares_cover_every_row_once() {
    for rows in [0, 1, 5, 49_152] {
        for threads in 1..=5 {
            let shares: Vec<Range<usize>> = (0..threads)
                .map(|thread| share(rows, thread, threads))
                .collect();
            assert_eq!(shares[0].start, 0);
            assert_eq!(shares[threads - 1].end, rows);
            assert!(shares.windows(2).all(|pair| pair[0].end == pair[1].start));
        }
    }
}
