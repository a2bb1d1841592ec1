//! Exact against the real-number angle: cos and sin of `p * base^(-2j/r)` from both kernels
//! and from the reference, at positions over the whole u32 range, against values that
//! `mpmath` computed at 60 digits from the real-number frequency
//! (`tests/data/exact_angles.py`, committed with its output `exact_angles.json`); RoPE at
//! f32 positions the same way (`exact_angles_f32.py`, `exact_angles_f32.json`).
//!
//! "True value" means that: the frequency is the real number `base^(-2j/r)`, not its f64
//! rounding (which alone moves the angle at position 2^32 by up to 2.1e-7 rad).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{Rng, ctx, u32_buffer, widen};
use serde_json::Value;
use wgpu_posenc::{
    ArrayView, FrequencyUnit, HostPositions, Layout, PairLayout, Positions, RopeSpec, Scaling,
    SinusoidalSpec, TensorView, reference,
};

/// The contract of the kernels against the true value, f32 output rounding included.
const CONTRACT: f64 = 1.5e-7;

struct Case {
    base: f64,
    r: u64,
    pairs: Vec<u64>,
    positions: Vec<u32>,
    /// `cos[k][i]`, `sin[k][i]`: pair `pairs[k]` at `positions[i]`.
    cos: Vec<Vec<f64>>,
    sin: Vec<Vec<f64>>,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/exact_angles.json"
    ))
    .expect("tests/data/exact_angles.json");
    let json: Value = serde_json::from_str(&text).expect("json");
    let nums = |v: &Value| -> Vec<f64> {
        v.as_array()
            .expect("array")
            .iter()
            .map(|x| x.as_f64().expect("number"))
            .collect()
    };
    let rows =
        |v: &Value| -> Vec<Vec<f64>> { v.as_array().expect("rows").iter().map(nums).collect() };
    json["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| Case {
            base: c["base"].as_f64().expect("base"),
            r: c["rotary_dim"].as_u64().expect("rotary_dim"),
            pairs: nums(&c["pairs"]).into_iter().map(|j| j as u64).collect(),
            positions: nums(&c["positions"])
                .into_iter()
                .map(|p| p as u32)
                .collect(),
            cos: rows(&c["cos"]),
            sin: rows(&c["sin"]),
        })
        .collect()
}

/// The largest error of `(cos, sin)` given per (pair index k, position index i).
fn worst(case: &Case, got: impl Fn(usize, usize) -> (f64, f64)) -> f64 {
    let mut worst = 0.0f64;
    for k in 0..case.pairs.len() {
        for i in 0..case.positions.len() {
            let (c, s) = got(k, i);
            worst = worst
                .max((c - case.cos[k][i]).abs())
                .max((s - case.sin[k][i]).abs());
        }
    }
    worst
}

#[test]
fn the_reference_is_the_real_number_value() {
    for case in cases() {
        let freqs = reference::inv_freq_exact(case.r, case.base);
        let err = worst(&case, |k, i| {
            let (f, f_lo) = freqs[case.pairs[k] as usize];
            let (s, c) = reference::sincos_exact(case.positions[i], f, f_lo);
            (c, s)
        });
        eprintln!("reference, base {} r {}: {err:.2e}", case.base, case.r);
        assert!(err < 1e-14, "base {} r {}: {err:e}", case.base, case.r);
    }
}

#[test]
fn rope_cos_and_sin_are_within_the_contract_at_every_u32_position() {
    let mut overall = 0.0f64;
    for case in cases() {
        // Every pair (1, 0) rotates to (cos, sin) exactly: x0 cos - 0 sin, x0 sin + 0 cos.
        let n = case.positions.len() as u64;
        let layout = Layout::bhsd([1, 1, n, case.r]);
        let input: Vec<f32> = (0..n * case.r)
            .map(|e| if e % 2 == 0 { 1.0 } else { 0.0 })
            .collect();
        let spec = RopeSpec::new()
            .pair_layout(PairLayout::Interleaved)
            .base(case.base);
        let ids = u32_buffer(&case.positions);
        let out = common::run_on_buffer(&input, |encoder, buffer| {
            ctx()
                .encode_rope(
                    encoder,
                    &spec,
                    &TensorView::new(buffer, layout),
                    Positions::Ids(ArrayView::new(&ids)),
                )
                .expect("rope");
        });
        let err = worst(&case, |k, i| {
            let e = (i as u64 * case.r + 2 * case.pairs[k]) as usize;
            (f64::from(out[e]), f64::from(out[e + 1]))
        });
        eprintln!("rope, base {} r {}: {err:.3e}", case.base, case.r);
        overall = overall.max(err);
        assert!(err <= CONTRACT, "base {} r {}: {err:e}", case.base, case.r);
    }
    eprintln!("rope: max |error| against mpmath {overall:.3e}");
}

#[test]
fn sinusoidal_sin_and_cos_are_within_the_contract_at_every_u32_position() {
    let mut rng = Rng::new(0xe4ac);
    let mut overall = 0.0f64;
    for case in cases() {
        // x * 0 + PE = PE: random embeddings, scale 0, positions as ids.
        let n = case.positions.len() as u64;
        let layout = Layout::bsd(1, n, case.r);
        let input = rng.values((n * case.r) as usize);
        let spec = SinusoidalSpec::new(case.r).base(case.base);
        let ids = u32_buffer(&case.positions);
        let out = common::run_on_buffer(&input, |encoder, buffer| {
            ctx()
                .encode_sinusoidal_add(
                    encoder,
                    &spec,
                    &TensorView::new(buffer, layout),
                    Positions::Ids(ArrayView::new(&ids)),
                    0.0,
                )
                .expect("sinusoidal");
        });
        // Interleaved: sin at 2i, cos at 2i + 1.
        let err = worst(&case, |k, i| {
            let e = (i as u64 * case.r + 2 * case.pairs[k]) as usize;
            (f64::from(out[e + 1]), f64::from(out[e]))
        });
        eprintln!("sinusoidal, base {} d {}: {err:.3e}", case.base, case.r);
        overall = overall.max(err);
        assert!(err <= CONTRACT, "base {} d {}: {err:e}", case.base, case.r);
        // The reference agrees with the kernel's input convention too.
        let mut expected = widen(&input);
        reference::sinusoidal_add(
            &spec,
            &layout,
            &mut expected,
            HostPositions::Ids(&case.positions),
            0.0,
        );
        let ref_err = worst(&case, |k, i| {
            let e = (i as u64 * case.r + 2 * case.pairs[k]) as usize;
            (expected[e + 1], expected[e])
        });
        assert!(ref_err < 1e-14, "reference sinusoidal: {ref_err:e}");
    }
    eprintln!("sinusoidal: max |error| against mpmath {overall:.3e}");
}

/// A spec of `tests/data/exact_angles_f32.json`: its RoPE spec, its pairs and their true
/// `(cos, sin)` at the file's f32 positions.
struct FloatCase {
    spec: RopeSpec,
    r: u64,
    pairs: Vec<u64>,
    cos: Vec<Vec<f64>>,
    sin: Vec<Vec<f64>>,
}

/// The f32 positions of `tests/data/exact_angles_f32.json` and its specs.
fn float_cases() -> (Vec<f32>, Vec<FloatCase>) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/exact_angles_f32.json"
    ))
    .expect("tests/data/exact_angles_f32.json");
    let json: Value = serde_json::from_str(&text).expect("json");
    let nums = |v: &Value| -> Vec<f64> {
        let a = v.as_array().expect("array");
        a.iter().map(|x| x.as_f64().expect("number")).collect()
    };
    let rows =
        |v: &Value| -> Vec<Vec<f64>> { v.as_array().expect("rows").iter().map(nums).collect() };
    let positions: Vec<f32> = nums(&json["positions"]).iter().map(|&p| p as f32).collect();
    let cases = json["specs"].as_array().expect("specs").iter().map(|c| {
        let r = c["rotary_dim"].as_u64().expect("rotary_dim");
        let factor = c["linear_factor"].as_f64().expect("factor");
        let mut spec = RopeSpec::new()
            .pair_layout(PairLayout::Interleaved)
            .base(c["base"].as_f64().expect("base"))
            .frequency_unit(match c["unit"].as_str() {
                Some("revolutions") => FrequencyUnit::Revolutions,
                _ => FrequencyUnit::Radians,
            });
        if factor != 1.0 {
            spec = spec.scaling(Scaling::Linear { factor });
        }
        FloatCase {
            spec,
            r,
            pairs: nums(&c["pairs"]).into_iter().map(|j| j as u64).collect(),
            cos: rows(&c["cos"]),
            sin: rows(&c["sin"]),
        }
    });
    (positions, cases.collect())
}

/// RoPE at f32 positions (fractional, negative, up to 2^32 - 256), frequencies in radians and
/// in revolutions (a whole revolution a position at the first pair): the GPU within the
/// contract of the real-number angle, the reference within 1e-12.
#[test]
fn rope_at_f32_positions_is_within_the_contract() {
    let (positions, cases) = float_cases();
    let bits: Vec<u32> = positions.iter().map(|p| p.to_bits()).collect();
    let n = positions.len() as u64;
    let mut overall = 0.0f64;
    for case in cases {
        let layout = Layout::bhsd([1, 1, n, case.r]);
        // Every pair (1, 0) rotates to (cos, sin).
        let input: Vec<f32> = (0..n * case.r)
            .map(|e| (e % 2 == 0) as u32 as f32)
            .collect();
        let ids = u32_buffer(&bits);
        let out = common::run_on_buffer(&input, |encoder, buffer| {
            ctx()
                .encode_rope(
                    encoder,
                    &case.spec,
                    &TensorView::new(buffer, layout),
                    Positions::Float(ArrayView::new(&ids)),
                )
                .expect("rope");
        });
        let mut want = widen(&input);
        reference::rope(&case.spec, &layout, &mut want, HostPositions::Float(&bits));
        let at = |k: usize, i: usize| (i as u64 * case.r + 2 * case.pairs[k]) as usize;
        let (mut err, mut ref_err) = (0.0f64, 0.0f64);
        for k in 0..case.pairs.len() {
            for i in 0..positions.len() {
                let (e, (c, s)) = (at(k, i), (case.cos[k][i], case.sin[k][i]));
                err = err
                    .max((f64::from(out[e]) - c).abs())
                    .max((f64::from(out[e + 1]) - s).abs());
                ref_err = ref_err
                    .max((want[e] - c).abs())
                    .max((want[e + 1] - s).abs());
            }
        }
        let what = format!(
            "{:?} base {} r {}",
            case.spec.frequency_unit, case.spec.base, case.r
        );
        eprintln!("rope at f32 positions, {what}: GPU {err:.3e}, reference {ref_err:.1e}");
        overall = overall.max(err);
        assert!(err <= CONTRACT, "{what}: GPU {err:e}");
        assert!(ref_err < 1e-12, "{what}: reference {ref_err:e}");
    }
    eprintln!("rope at f32 positions: max |error| against mpmath {overall:.3e}");
}
