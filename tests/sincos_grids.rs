//! 2-D and 3-D sin-cos tables ([`SincosGrid`]) against diffusers' own modules (`PatchEmbed`
//! of DiT and PixArt-alpha, SD3's cropped table, `CogVideoXPatchEmbed`) and timm's
//! `build_sincos2d_pos_embed` in both layouts (committed output of
//! `tests/data/diffusers/sincos_grids.py`, with mpmath's real-number rows), and as a table
//! and a fused add over strided, guarded views in every dtype against the reference.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{Rng, assert_matches, ctx, guarded_input, max_error, run_on_buffer, widen};
use serde_json::Value;
use wgpu_posenc::{Error, GridBlock, Layout, SincosGrid, TensorView, reference};

const CONTRACT: f64 = 1.5e-7;

fn golden() -> Value {
    common::test_data("diffusers/sincos_grids.json")
}

fn u(v: &Value) -> u64 {
    v.as_u64().expect("integer")
}

fn f(v: &Value) -> f64 {
    v.as_f64().expect("number")
}

/// The grid a golden case describes, through the crate's constructors.
fn grid_of(case: &Value) -> SincosGrid {
    let dim = u(&case["embed_dim"]);
    let g: Vec<u64> = case["grid"]
        .as_array()
        .expect("grid")
        .iter()
        .map(u)
        .collect();
    match case["kind"].as_str().expect("kind") {
        "2d" => SincosGrid::diffusers_2d(
            dim,
            [g[0], g[1]],
            f(&case["base_size"]),
            f(&case["interpolation_scale"]),
        )
        .expect("grid"),
        "cropped" => SincosGrid::diffusers_cropped(
            dim,
            u(&case["max_size"]),
            [g[0], g[1]],
            f(&case["base_size"]),
            f(&case["interpolation_scale"]),
        )
        .expect("grid"),
        "timm" => SincosGrid::timm_2d(
            dim,
            [g[0], g[1]],
            f(&case["temperature"]),
            case["reverse_coord"].as_bool().expect("reverse_coord"),
            case["interleave_sin_cos"].as_bool().expect("interleave"),
        )
        .expect("grid"),
        _ => SincosGrid::diffusers_3d(
            dim,
            [g[0], g[1], g[2]],
            f(&case["interpolation_scale"]),
            f(&case["temporal_interpolation_scale"]),
        )
        .expect("grid")
        .zero_rows(u(&case["zero_rows"])),
    }
}

#[test]
fn diffusers_and_timm_tables_within_contract_of_the_real_number() {
    let data = golden();
    for case in data["cases"].as_array().expect("cases") {
        let name = case["name"].as_str().expect("name");
        let grid = grid_of(case);
        let table = ctx().sincos_grid_host(&grid).expect("table");
        let dim = grid.dim as usize;
        assert_eq!(table.len(), grid.rows() as usize * dim, "{name}: rows");
        let z = grid.zero_rows as usize;
        let (mut ours_err, mut apart) = (0.0f64, 0.0f64);
        let rows = case["rows"].as_array().expect("rows");
        for (k, r) in rows.iter().enumerate() {
            let r = u(r) as usize;
            // The coordinates are diffusers' f32 values, bit for bit.
            for (b, c) in case["coords"][k]
                .as_array()
                .expect("coords")
                .iter()
                .enumerate()
            {
                if let Some(c) = c.as_f64() {
                    let ours = grid.blocks[b].coords[r - z];
                    assert_eq!(
                        ours.to_bits(),
                        (c as f32).to_bits(),
                        "{name}: row {r}, block {b}"
                    );
                }
            }
            let row = &table[r * dim..(r + 1) * dim];
            let exact: Vec<f64> = case["exact"][k]
                .as_array()
                .expect("exact")
                .iter()
                .map(f)
                .collect();
            let theirs: Vec<f64> = case["diffusers"][k]
                .as_array()
                .expect("diffusers")
                .iter()
                .map(|v| f64::from(f(v) as f32))
                .collect();
            ours_err = ours_err.max(max_error(row, &exact));
            apart = apart.max(max_error(row, &theirs));
        }
        let theirs_err = f(&case["max_diffusers_error"]);
        assert!(
            ours_err <= CONTRACT,
            "{name}: {ours_err:e} from the real number"
        );
        assert!(
            apart <= theirs_err + CONTRACT,
            "{name}: {apart:e} from the library"
        );
        // The whole table against the reference.
        let whole = max_error(&table, &reference::sincos_grid(&grid));
        assert!(whole <= CONTRACT, "{name}: {whole:e} from the reference");
        eprintln!(
            "{name} ({}, {} rows): GPU within {ours_err:.2e} of the real number and {apart:.2e} \
             of the library (whose own error is {theirs_err:.2e}); whole table {whole:.2e} from \
             the reference",
            case["module"].as_str().unwrap_or(""),
            grid.rows()
        );
    }
}

#[test]
fn grid_table_and_add_over_strided_views_in_every_dtype() {
    let mut rng = Rng::new(2929);
    let grids = [
        SincosGrid::diffusers_2d(64, [5, 7], 4.0, 1.5)
            .expect("grid")
            .zero_rows(3),
        SincosGrid::diffusers_3d(96, [3, 4, 5], 1.875, 1.0)
            .expect("grid")
            .zero_rows(2),
        // Blocks of one and two pairs (the scalar kernel).
        SincosGrid {
            dim: 6,
            zero_rows: 1,
            blocks: vec![
                GridBlock::concatenated(0, 2, vec![0.5, -3.0, 1e6]),
                GridBlock::concatenated(2, 4, vec![7.25, 0.0, 2e9]),
            ],
        },
        // timm's layouts: sines of both axes, then their cosines; and interleaved blocks.
        SincosGrid::timm_2d(32, [3, 5], 100.0, false, false).expect("grid"),
        SincosGrid::timm_2d(64, [4, 3], 10_000.0, true, true)
            .expect("grid")
            .zero_rows(1),
    ];
    for grid in &grids {
        let (rows, dim) = (grid.rows(), grid.dim);
        // [batch 2, heads 2, rows, dim], BSHD with gaps.
        let view = Layout::strided(
            [2, 2, rows, dim],
            [rows * (2 * dim + 5) + 3, dim + 1, 2 * dim + 5],
        )
        .with_offset(7);
        let table = reference::sincos_grid(grid);
        for add in [None, Some(0.5f32)] {
            let input = guarded_input(&mut rng, &view, 11);
            let out = run_on_buffer(&input, |encoder, buffer| {
                let x = TensorView::new(buffer, view);
                match add {
                    Some(s) => ctx().encode_sincos_grid_add(encoder, grid, &x, s),
                    None => ctx().encode_sincos_grid(encoder, grid, &x),
                }
                .expect("encode");
            });
            let mut expected = widen(&input);
            for b in 0..2 {
                for h in 0..2 {
                    for s in 0..rows {
                        let at = reference::row_start(&view, b, h, s) as usize;
                        for k in 0..dim as usize {
                            let pe = table[(s * dim) as usize + k];
                            let x = &mut expected[at + k];
                            *x = add.map_or(pe, |sc| *x * f64::from(sc) + pe);
                        }
                    }
                }
            }
            let what = format!("grid dim {dim}, add {add:?}");
            assert_matches(&input, &out, &expected, 4e-7, &what);
        }
    }
}

#[test]
fn grid_host_table_has_zero_rows_first() {
    let grid = SincosGrid::diffusers_2d(16, [2, 3], 2.0, 1.0)
        .expect("grid")
        .zero_rows(2);
    let t = ctx().sincos_grid_host(&grid).expect("table");
    assert_eq!(t.len(), 8 * 16);
    // The host table starts from zeros: its rows are compared with the reference, whose
    // zero rows the poisoned views of the test above check are written.
    assert!(max_error(&t, &reference::sincos_grid(&grid)) <= CONTRACT);
    // Token (0, 0): coordinates 0, so [0 .. | 1 .. | 0 .. | 1 ..]; the cosines cannot be
    // the initial zeros.
    let first = &t[32..48];
    assert!(first[4..8].iter().chain(&first[12..16]).all(|&v| v == 1.0));
}

#[test]
fn bad_grids_are_typed_errors() {
    let c = ctx();
    let mut odd = SincosGrid::diffusers_2d(16, [2, 2], 2.0, 1.0).expect("grid");
    odd.blocks[0].cos_offset = 7;
    let mut short = SincosGrid::diffusers_2d(16, [2, 2], 2.0, 1.0).expect("grid");
    short.blocks[1].coords.pop();
    let nan = SincosGrid::diffusers_2d(16, [2, 2], 2.0, 0.0).expect("grid"); // division by zero: infinities
    for (grid, want) in [(odd, "width"), (short, "coords"), (nan, "coord")] {
        let e = c.sincos_grid_host(&grid).expect_err(want);
        let ok = match want {
            "width" => matches!(
                e,
                Error::InvalidParameter {
                    what: "grid dim",
                    ..
                }
            ),
            "coords" => matches!(e, Error::PositionIdsTooShort { .. }),
            _ => matches!(
                e,
                Error::InvalidParameter {
                    what: "grid coordinate",
                    ..
                }
            ),
        };
        assert!(ok, "{want}: {e}");
    }
    // Sizes whose coordinates would not fit memory: an error, not an aborting allocation.
    let huge = [
        SincosGrid::diffusers_2d(16, [u64::MAX, 2], 2.0, 1.0).map(drop),
        SincosGrid::diffusers_cropped(16, u64::MAX, [2, 2], 2.0, 1.0).map(drop),
        SincosGrid::diffusers_top_left(16, u64::MAX, [2, 2]).map(drop),
        SincosGrid::diffusers_3d(64, [1 << 10, 1 << 10, 1 << 10], 1.0, 1.0).map(drop),
        SincosGrid::timm_2d(16, [1 << 13, 1 << 12], 10_000.0, false, false).map(drop),
    ];
    for e in huge {
        let e = e.expect_err("huge grid");
        assert!(
            matches!(
                e,
                Error::InvalidParameter {
                    what: "grid tokens",
                    ..
                }
            ),
            "{e}"
        );
    }
    // A tensor of the wrong shape.
    let grid = SincosGrid::diffusers_2d(16, [2, 2], 2.0, 1.0).expect("grid");
    let buffer = common::f32_buffer(&[0.0; 256]);
    let mut encoder = c.device().create_command_encoder(&Default::default());
    let view = TensorView::new(&buffer, Layout::rows(5, 16));
    let e = c
        .encode_sincos_grid(&mut encoder, &grid, &view)
        .expect_err("rows");
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
}

/// CogView3Plus' crop is the top-left corner of its whole table, row by row; a side past the
/// table is an error.
#[test]
fn top_left_crop_is_the_corner_of_the_whole_table() {
    let whole = SincosGrid::diffusers_top_left(32, 9, [9, 9]).expect("whole");
    let corner = SincosGrid::diffusers_top_left(32, 9, [4, 7]).expect("corner");
    for (b, c) in whole.blocks.iter().zip(&corner.blocks) {
        let want: Vec<f32> = (0..4)
            .flat_map(|i| (0..7).map(move |j| i * 9 + j))
            .map(|n| b.coords[n])
            .collect();
        assert_eq!(c.coords, want);
    }
    assert!(SincosGrid::diffusers_top_left(32, 9, [10, 2]).is_err());
}
