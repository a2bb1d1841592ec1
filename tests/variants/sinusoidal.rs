//! The sinusoidal encoding's timescale forms: fairseq's with its padding index, and
//! tensor2tensor's as its code computes them.

use super::TOL;
use super::common::{self, Rng, assert_matches, ctx, widen};
use wgpu_posenc::{HostPositions, Layout, SinusoidalLayout, SinusoidalSpec, reference};

#[test]
fn sinusoidal_timescales_and_padding() {
    // fairseq: concatenated, timescales (1, 10000), padding index 1, real tokens from 2.
    let spec = SinusoidalSpec::new(64)
        .layout(SinusoidalLayout::Concatenated)
        .timescales(1.0, 10_000.0)
        .padding_idx(1);
    // Its frequencies: exp(-i * ln(10000) / (half - 1)).
    for (i, w) in spec.frequencies().iter().enumerate() {
        let fairseq = (-(i as f64) * 10_000f64.ln() / 31.0).exp();
        assert!(
            (w - fairseq).abs() <= 4e-15 * fairseq,
            "{i}: {w} vs {fairseq}"
        );
    }
    let table = ctx().sinusoidal_table_host(&spec, 40, 0).expect("table");
    assert!(
        table[64..128].iter().all(|&v| v == 0.0),
        "padding row must be zero"
    );
    assert!(common::max_error(&table, &reference::sinusoidal_table(&spec, 40, 0)) <= 2.5e-7);
    // The fused add with fairseq positions: padding tokens (position 1) get nothing added.
    let mut rng = Rng::new(51);
    let layout = Layout::bsd(2, 6, 64);
    let ids: Vec<u32> = vec![2, 3, 4, 5, 1, 1, 2, 3, 1, 1, 1, 1];
    let x = rng.values(2 * 6 * 64);
    let mut gpu = x.clone();
    ctx()
        .sinusoidal_add_host(&spec, layout, &mut gpu, HostPositions::Ids(&ids), 8.0)
        .expect("add");
    let mut expected = widen(&x);
    reference::sinusoidal_add(&spec, &layout, &mut expected, HostPositions::Ids(&ids), 8.0);
    assert_matches(&x, &gpu, &expected, 4e-6, "fairseq add");
    for (t, &p) in ids.iter().enumerate() {
        if p == 1 {
            let row = t * 64..(t + 1) * 64;
            assert!(
                gpu[row.clone()]
                    .iter()
                    .zip(&x[row])
                    .all(|(g, x)| *g == x * 8.0)
            );
        }
    }
}

#[test]
fn tensor2tensor_timescales_are_what_its_code_computes() {
    // get_timing_signal_1d: inv_timescale_i = min * exp(-i * ln(max / min) / (n - 1)).
    let (min, max, d) = (2.0f64, 5000.0f64, 64u64);
    let n = d / 2;
    let code = SinusoidalSpec::new(d).tensor2tensor_timescales(min, max);
    let inc = (max / min).ln() / (n - 1) as f64;
    for (i, w) in code.frequencies().iter().enumerate() {
        let want = min * (-(i as f64) * inc).exp();
        assert!(
            (w - want).abs() <= 4.0 * f64::EPSILON * want,
            "{i}: {w} vs {want}"
        );
    }
    // The reciprocal (docstring) form differs unless min == 1.
    let docstring = SinusoidalSpec::new(d).timescales(min, max).frequencies();
    assert!((docstring[0] - 1.0 / min).abs() < 1e-15);
    let one = SinusoidalSpec::new(d).timescales(1.0, max).frequencies();
    let one_code = SinusoidalSpec::new(d)
        .tensor2tensor_timescales(1.0, max)
        .frequencies();
    for (a, b) in one.iter().zip(&one_code) {
        assert!((a - b).abs() <= 2.0 * f64::EPSILON * a);
    }
    // And the GPU table of the code form matches the reference.
    let table = ctx().sinusoidal_table_host(&code, 50, 3).expect("table");
    let expected = reference::sinusoidal_table(&code, 50, 3);
    assert!(common::max_error(&table, &expected) < TOL);
}
