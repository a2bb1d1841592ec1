//! Sinusoids at f32 positions: diffusers' timestep projection (`get_timestep_embedding`, the
//! `Timesteps` modules of diffusers' own model classes) against diffusers' output and the
//! real-number values mpmath computed (`tests/data/diffusers/timesteps.py`, committed with
//! its output), and f32 positions of every layout, width and operation against the
//! reference, with guard regions.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{
    Rng, assert_matches, ctx, guarded_input, max_error, poison, run_on_buffer, u32_buffer,
};
use serde_json::Value;
use wgpu_posenc::{
    ArrayView, Dims, Error, HostPositions, Layout, Positions, SinusoidalLayout, SinusoidalSpec,
    TensorView, reference,
};

/// The kernels' contract against the real number, f32 output rounding included.
const CONTRACT: f64 = 1.5e-7;

fn golden() -> Value {
    common::test_data("diffusers/timesteps.json")
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

fn rows(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("rows")
        .iter()
        .flat_map(floats)
        .collect()
}

/// The spec of a golden case, from its recorded parameters.
fn spec_of(case: &Value) -> SinusoidalSpec {
    let dim = case["dim"].as_u64().expect("dim");
    let flip = case["flip_sin_to_cos"].as_bool().expect("flip");
    let shift = case["downscale_freq_shift"].as_f64().expect("shift");
    SinusoidalSpec::timesteps(dim, flip, shift)
        .max_period(case["max_period"].as_f64().expect("max_period"))
        .freq_scale(case["scale"].as_f64().expect("scale"))
}

/// The table of `spec` at f32 `positions`, `[1, 1, n, d]` at element `offset` of a buffer
/// poisoned everywhere, through `encode_sinusoidal_table_at`; the guards are checked and
/// the rows returned.
fn gpu_table(spec: &SinusoidalSpec, positions: &[f32], offset: u64) -> Vec<f32> {
    let n = positions.len() as u64;
    let layout = Layout::rows(n, spec.d_model).with_offset(offset);
    let guard = 9;
    let end = (offset + n * spec.d_model) as usize;
    let input: Vec<f32> = (0..end + guard).map(poison).collect();
    let ids = u32_buffer(&positions.iter().map(|p| p.to_bits()).collect::<Vec<_>>());
    let out = run_on_buffer(&input, |encoder, buffer| {
        let positions = Positions::Float(ArrayView::new(&ids));
        ctx()
            .encode_sinusoidal_table_at(encoder, spec, &TensorView::new(buffer, layout), positions)
            .expect("encode");
    });
    let o = offset as usize;
    for i in (0..o).chain(end..end + guard) {
        assert_eq!(
            out[i].to_bits(),
            poison(i).to_bits(),
            "guard element {i} overwritten"
        );
    }
    out[o..end].to_vec()
}

#[test]
fn diffusers_timestep_projections_within_contract_of_the_real_number() {
    let data = golden();
    for case in data["cases"].as_array().expect("cases") {
        let name = case["name"].as_str().expect("name");
        let spec = spec_of(case);
        let ts: Vec<f32> = floats(&case["timesteps"])
            .iter()
            .map(|&t| t as f32)
            .collect();
        let exact = rows(&case["exact"]);
        let theirs = rows(&case["diffusers"]);
        let ours = gpu_table(&spec, &ts, 3);
        let err = max_error(&ours, &exact);
        assert!(err <= CONTRACT, "{name}: GPU {err:e} from the real number");
        // The reference is exact to ~1e-12.
        let reference: Vec<f64> = ts
            .iter()
            .flat_map(|&t| reference::sinusoidal_row_at(&spec, t))
            .collect();
        let ref_err = reference
            .iter()
            .zip(&exact)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(
            ref_err <= 1e-12,
            "{name}: reference {ref_err:e} from the real number"
        );
        // diffusers computes the angle in f32: ours and theirs differ by its error.
        let theirs_err = case["max_diffusers_error"].as_f64().expect("error");
        let apart = max_error(&ours, &theirs);
        assert!(
            apart <= theirs_err + CONTRACT,
            "{name}: {apart:e} from diffusers, whose own error is {theirs_err:e}"
        );
        eprintln!(
            "{name} ({}): GPU within {err:.2e} of the real number; diffusers (f32) within \
             {theirs_err:.2e}, worst at t = {}",
            case["models"].as_str().unwrap_or(""),
            case["worst_timestep"]
        );
    }
}

/// Random f32 positions: timesteps, coordinates, negatives.
fn random_positions(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let u = rng.value(); // in [-1, 1)
            match i % 4 {
                0 => (u + 1.0) * 500.0,
                1 => u * 64.0,
                2 => (u * 1e6).round() + 0.25,
                _ => u * 3.0e9,
            }
        })
        .collect()
}

#[test]
fn float_positions_match_the_reference_in_every_layout_width_and_operation() {
    let mut rng = Rng::new(29);
    let layouts = [
        SinusoidalLayout::Interleaved,
        SinusoidalLayout::Concatenated,
        SinusoidalLayout::ConcatenatedCosFirst,
    ];
    // (d_model, batch, heads, seq): vec4 rows, scalar rows, odd widths.
    for (d, nb, nh, ns) in [
        (256, 2, 3, 37),
        (64, 3, 1, 100),
        (255, 2, 2, 9),
        (33, 1, 4, 50),
        (6, 2, 1, 5),
    ] {
        for (i, layout) in layouts.into_iter().enumerate() {
            let spec = SinusoidalSpec::timesteps(d, i == 2, (i % 2) as f64)
                .layout(layout)
                .freq_scale([1.0, 1000.0, 0.5][i]);
            // BSHD with a gap after each token's heads.
            let view = Layout::bshd(Dims {
                batch: nb,
                heads: nh,
                seq: ns,
                head_dim: d,
            })
            .with_offset(5);
            let view = Layout {
                strides: [
                    view.strides[0] + 7 * ns,
                    view.strides[1],
                    view.strides[2] + 7,
                ],
                ..view
            };
            let pos = random_positions(&mut rng, (nb * ns) as usize);
            let host = HostPositions::float(&pos);
            let ids = u32_buffer(&pos.iter().map(|p| p.to_bits()).collect::<Vec<_>>());
            for add in [false, true] {
                let input = guarded_input(&mut rng, &view, 13);
                let out = run_on_buffer(&input, |encoder, buffer| {
                    let x = TensorView::new(buffer, view);
                    let positions = Positions::Float(ArrayView::new(&ids));
                    let c = ctx();
                    if add {
                        c.encode_sinusoidal_add(encoder, &spec, &x, positions, 0.75)
                    } else {
                        c.encode_sinusoidal_table_at(encoder, &spec, &x, positions)
                    }
                    .expect("encode");
                });
                let mut expected = common::widen(&input);
                if add {
                    reference::sinusoidal_add(&spec, &view, &mut expected, host, 0.75);
                } else {
                    reference::sinusoidal_table_at(&spec, &view, &mut expected, host);
                }
                let what = format!("d {d} {layout:?} add {add}");
                // The add rounds x * s + PE once more in f32.
                assert_matches(
                    &input,
                    &out,
                    &expected,
                    if add { 4e-7 } else { CONTRACT },
                    &what,
                );
            }
        }
    }
}

#[test]
fn host_table_at_float_positions_is_diffusers_timesteps() {
    let spec = SinusoidalSpec::timesteps(256, true, 0.0);
    let t = [0.0f32, 1.0, 999.0, 250.5, -3.25];
    let got = ctx()
        .sinusoidal_table_at_host(
            &spec,
            Layout::rows(t.len() as u64, 256),
            HostPositions::float(&t),
        )
        .expect("table");
    let want: Vec<f64> = t
        .iter()
        .flat_map(|&p| reference::sinusoidal_row_at(&spec, p))
        .collect();
    assert!(max_error(&got, &want) <= CONTRACT);
    // flip_sin_to_cos: the first half is cos; t = 0 gives [1 .. 1 | 0 .. 0].
    assert!(got[..128].iter().all(|&v| v == 1.0) && got[128..256].iter().all(|&v| v == 0.0));
}

#[test]
fn bad_float_positions_are_typed_errors() {
    let c = ctx();
    let spec = SinusoidalSpec::timesteps(16, true, 0.0);
    let layout = Layout::rows(1, 16);
    for p in [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        4294967296.0,
        -5e9,
    ] {
        let e = c
            .sinusoidal_table_at_host(&spec, layout, HostPositions::float(&[p]))
            .expect_err("bad position");
        assert!(
            matches!(
                e,
                Error::InvalidParameter {
                    what: "f32 position",
                    ..
                }
            ),
            "{p}: {e}"
        );
    }
}

#[test]
fn bad_timestep_parameters_and_mixed_position_kinds_are_typed_errors() {
    let c = ctx();
    let layout = Layout::rows(1, 16);
    let bad_specs = [
        (
            SinusoidalSpec::timesteps(16, false, 8.0),
            "downscale_freq_shift",
        ),
        (
            SinusoidalSpec::timesteps(16, false, f64::NAN),
            "downscale_freq_shift",
        ),
        (
            SinusoidalSpec::timesteps(16, false, 0.0).max_period(0.0),
            "max_period",
        ),
        (
            SinusoidalSpec::timesteps(16, false, 0.0).max_period(f64::INFINITY),
            "max_period",
        ),
        (
            SinusoidalSpec::timesteps(16, false, 0.0).freq_scale(0.0),
            "frequency scale",
        ),
        (
            SinusoidalSpec::timesteps(16, false, 0.0).freq_scale(f64::NAN),
            "frequency scale",
        ),
    ];
    for (spec, what) in bad_specs {
        let e = c
            .sinusoidal_table_at_host(&spec, layout, HostPositions::float(&[1.0]))
            .expect_err("bad spec");
        assert!(
            matches!(e, Error::InvalidParameter { what: w, .. } if w == what),
            "{e}"
        );
    }
    let e = c
        .sinusoidal_table_at_host(
            &SinusoidalSpec::timesteps(1, false, 0.0),
            Layout::rows(1, 1),
            HostPositions::Start(0),
        )
        .expect_err("d_model 1");
    assert!(matches!(e, Error::InvalidDModel { d_model: 1 }), "{e}");
    // A padding index names an integer position.
    let padded = SinusoidalSpec::new(16).padding_idx(1);
    let e = c
        .sinusoidal_table_at_host(&padded, layout, HostPositions::float(&[1.0]))
        .expect_err("padding");
    assert!(matches!(e, Error::PositionsMismatch(_)), "{e}");
    // The sinusoidal encoding has one position a token: f32 position axes are RoPE's.
    let bits = [1.0f32.to_bits(); 3];
    let e = c
        .sinusoidal_table_at_host(
            &SinusoidalSpec::new(16),
            layout,
            HostPositions::FloatAxes(&bits),
        )
        .expect_err("axes");
    assert!(matches!(e, Error::PositionsMismatch(_)), "{e}");
}

#[test]
fn non_finite_and_out_of_range_positions_read_on_the_gpu_give_nan_rows() {
    let spec = SinusoidalSpec::timesteps(8, false, 0.0);
    let pos = [
        1.5f32,
        f32::NAN,
        f32::INFINITY,
        4294967296.0,
        -4294967296.0,
        4294967040.0,
    ];
    let out = gpu_table(&spec, &pos, 0);
    for (k, &p) in pos.iter().enumerate() {
        let row = &out[k * 8..k * 8 + 8];
        let ok = wgpu_posenc_float_ok(p);
        assert_eq!(row.iter().all(|v| v.is_nan()), !ok, "position {p}: {row:?}");
        if ok {
            let want = reference::sinusoidal_row_at(&spec, p);
            assert!(max_error(row, &want) <= CONTRACT, "position {p}");
        }
    }
}

/// The positions whose angles are exact: finite, `|p| < 2^32`.
fn wgpu_posenc_float_ok(p: f32) -> bool {
    p.is_finite() && p.abs() < 4294967296.0
}

/// Wan 2.1's original projection computes in float64 (`sinusoidal_embedding_1d`, run from
/// its repository by `tests/data/wan/wan_timesteps.py`): ours agrees with it within the
/// contract, both being that close to the real number.
#[test]
fn wan_original_float64_projection_agrees() {
    let data = common::test_data("wan/wan_timesteps.json");
    let t: Vec<f32> = floats(&data["timesteps"])
        .iter()
        .map(|&x| x as f32)
        .collect();
    let dim = data["freq_dim"].as_u64().expect("freq_dim");
    // Wan's `[cos | sin]` at `10000^(-k / half)`: diffusers' Timesteps(dim, True, 0).
    let spec = SinusoidalSpec::timesteps(dim, true, 0.0);
    let ours = gpu_table(&spec, &t, 5);
    let (exact, wan) = (rows(&data["exact"]), rows(&data["wan"]));
    let err = |other: &[f64]| {
        ours.iter()
            .zip(other)
            .map(|(&a, &b)| (f64::from(a) - b).abs())
            .fold(0.0f64, f64::max)
    };
    let (to_real, to_wan) = (err(&exact), err(&wan));
    let own = data["max_wan_error"].as_f64().expect("error");
    assert!(to_real <= CONTRACT, "{to_real:e} from the real number");
    assert!(to_wan <= CONTRACT + own, "{to_wan:e} from Wan");
    eprintln!(
        "Wan 2.1 (float64) within {own:.1e} of the real number; ours within {to_real:.2e} of \
         it and {to_wan:.2e} of Wan, at {} timesteps",
        t.len()
    );
}
