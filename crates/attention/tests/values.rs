//! The values' product (`moot_attention::values`) against the product in double precision:
//! tiles cut short in rows and columns, lengths with a tail past the last eight numbers, and
//! strides wider than a row, as llama.cpp's views pass them.

use moot_attention::reference::{float, half, noise, values_tested_here};
use moot_attention::values::{HalfProduct, multiply};

#[test]
fn every_tile_and_tail_matches_the_product_in_double_precision() {
    if !values_tested_here() {
        return;
    }
    let mut seed = 3;
    for (rows, columns, length) in [(1, 1, 1), (64, 7, 256), (13, 3, 1029), (5, 512, 37)] {
        let (row_stride, column_stride, out_stride) = (length + 5, length + 3, rows + 2);
        let numbers: Vec<u16> = (0..rows * row_stride)
            .map(|_| half(noise(&mut seed)))
            .collect();
        let weights: Vec<f32> = (0..columns * column_stride)
            .map(|_| noise(&mut seed).abs())
            .collect();
        let mut out = vec![f32::NAN; columns * out_stride];
        let product = HalfProduct {
            rows: numbers.as_ptr(),
            row_stride,
            columns: weights.as_ptr(),
            column_stride,
            column_count: columns,
            length,
            out: out.as_mut_ptr(),
            out_stride,
        };
        // Two calls, as two threads share the rows.
        let half_way = rows / 2;
        for share in [0..half_way, half_way..rows] {
            // SAFETY: the operands above hold every row and column at these strides.
            unsafe { multiply(&product, share) };
        }
        for c in 0..columns {
            for r in 0..rows {
                let expected: f64 = (0..length)
                    .map(|i| {
                        float(numbers[r * row_stride + i])
                            * f64::from(weights[c * column_stride + i])
                    })
                    .sum();
                let got = f64::from(out[c * out_stride + r]);
                assert!(
                    (got - expected).abs() <= 1e-4 * expected.abs().max(1.0),
                    "{rows}x{columns}x{length}: row {r}, column {c}: {got} against {expected}"
                );
            }
            assert!(
                out[c * out_stride + rows..(c + 1) * out_stride]
                    .iter()
                    .all(|v| v.is_nan()),
                "nothing is written between two columns' rows"
            );
        }
    }
}
