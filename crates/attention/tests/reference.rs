//! The attention kernel against attention in double precision: every row count, head size and
//! cache format, and a row whose mask hides every cell.

use moot_attention::reference::{HIDDEN, half, noise, reference, store, tested_here};
use moot_attention::{Format, Group, takes};

#[test]
fn every_row_count_and_format_matches_attention_in_double_precision() {
    if !tested_here() {
        return;
    }
    assert!(!takes(80), "heads of 80 values are not taken");
    let mut seed = 7;
    let formats = [Format::F16, Format::Q8_0];
    for dim in [64, 128] {
        // Odd cell counts leave a partial last vector; 1 is a cache's first step; 100 rows
        // come in blocks.
        for (cells, rows) in [(1, 1), (37, 3), (300, 7), (1029, 12), (64, 25), (130, 100)] {
            // Keys and values of three heads side by side, as llama.cpp lays a cache out.
            let per_cell = 3 * dim;
            let key_numbers: Vec<f32> = (0..cells * per_cell)
                .map(|_| noise(&mut seed) * 2.0)
                .collect();
            let value_numbers: Vec<f32> = (0..cells * per_cell).map(|_| noise(&mut seed)).collect();
            let queries: Vec<Vec<f32>> = (0..rows)
                .map(|_| (0..dim).map(|_| noise(&mut seed) * 3.0).collect())
                .collect();
            // Row 0 sees every cell, the others hide some (a causal step's later tokens, a
            // cache's padding); the last row hides the first cell and all but the first.
            let masks: Vec<Vec<u16>> = (0..rows)
                .map(|row| {
                    (0..cells)
                        .map(|cell| match row {
                            0 => half(0.0),
                            _ if row == rows - 1 && rows > 1 => {
                                if cell == 1 || cells == 1 {
                                    half(0.0)
                                } else {
                                    HIDDEN
                                }
                            }
                            _ if cell + row * 5 >= cells + 4 => HIDDEN,
                            _ => half(noise(&mut seed)),
                        })
                        .collect()
                })
                .collect();
            for key_format in formats {
                for value_format in formats {
                    let (keys, key_row, stored_keys) = store(&key_numbers, per_cell, key_format);
                    let (values, value_row, stored_values) =
                        store(&value_numbers, per_cell, value_format);
                    let mut outputs = vec![vec![f32::NAN; dim]; rows];
                    let output_pointers: Vec<*mut f32> =
                        outputs.iter_mut().map(|row| row.as_mut_ptr()).collect();
                    // The second head: a third of each row in.
                    let group = Group {
                        queries: &queries.iter().map(|q| q.as_ptr()).collect::<Vec<_>>(),
                        masks: &masks.iter().map(|m| m.as_ptr()).collect::<Vec<_>>(),
                        outputs: &output_pointers,
                        keys: keys[key_row / 3..].as_ptr(),
                        key_stride: key_row,
                        key_format,
                        values: values[value_row / 3..].as_ptr(),
                        value_stride: value_row,
                        value_format,
                        cells,
                        dim,
                        scale: 1.0 / (dim as f32).sqrt(),
                    };
                    let mut scratch = Vec::new();
                    // SAFETY: every row and cell above is as long as the group says.
                    unsafe { moot_attention::attend(&group, &mut scratch) };
                    for row in 0..rows {
                        let expected = reference(
                            &queries[row],
                            &masks[row],
                            &stored_keys,
                            &stored_values,
                            per_cell,
                            dim,
                            dim,
                            group.scale,
                        );
                        for (i, (got, want)) in outputs[row].iter().zip(&expected).enumerate() {
                            assert!(
                                (*got as f64 - want).abs() < 2e-5,
                                "dim {dim}, {cells} cells, {key_format:?} keys, {value_format:?} values, row {row} of {rows}, value {i}: {got} against {want}"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn a_row_whose_mask_hides_every_cell_comes_out_zero() {
    if !tested_here() {
        return;
    }
    let cells = 20;
    let keys: Vec<u8> = [half(0.5); 64]
        .repeat(cells)
        .iter()
        .flat_map(|h| h.to_le_bytes())
        .collect();
    let values: Vec<u8> = [half(1.0); 64]
        .repeat(cells)
        .iter()
        .flat_map(|h| h.to_le_bytes())
        .collect();
    let query = vec![1.0f32; 64];
    let hidden = vec![HIDDEN; cells];
    let mut out = vec![f32::NAN; 64];
    let group = Group {
        queries: &[query.as_ptr()],
        masks: &[hidden.as_ptr()],
        outputs: &[out.as_mut_ptr()],
        keys: keys.as_ptr(),
        key_stride: 128,
        key_format: Format::F16,
        values: values.as_ptr(),
        value_stride: 128,
        value_format: Format::F16,
        cells,
        dim: 64,
        scale: 0.125,
    };
    // SAFETY: every row and cell above is as long as the group says.
    unsafe { moot_attention::attend(&group, &mut Vec::new()) };
    assert!(out.iter().all(|v| *v == 0.0), "{out:?}");
}
