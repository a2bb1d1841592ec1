//! Cos and sin rounded to bf16 ([`RopeSpec::cos_sin_bf16`]) against what HF transformers'
//! rotary modules return in a bf16 model (`tests/data/hf/hf_bf16_cos_sin.py`): Pixtral's
//! vision tower (spec read by `RotaryModule::from_hf_vision_config`, positions made by a
//! `PositionGrid`) and Llama (`RopeSpec::from_hf_config`). Each pair of the input is the unit
//! vector `(1, 0)`, so the rotated pair is the `(cos, sin)` the kernel applied.

use super::common::{ctx, run_on_buffer, test_data, u32_buffer};
use super::list;
use serde_json::Value;
use wgpu_posenc::{
    ArrayView, GridAxis, GridSegment, Layout, PositionGrid, Positions, RopeSpec, RotaryModule,
    TensorView, reference,
};

/// One bf16 unit in the last place of `v` (its 8 significant bits).
fn bf16_ulp(v: f64) -> f64 {
    if v == 0.0 {
        return 2f64.powi(-133);
    }
    2f64.powi(v.abs().log2().floor() as i32 - 7)
}

/// The cos and sin the kernel applies at each token (`[tokens][pairs]` each), half-split
/// pairs over `d` lanes, one head, positions `positions`.
fn applied(
    spec: &RopeSpec,
    n: usize,
    d: usize,
    positions: impl Fn(ArrayView<'_>) -> Positions<ArrayView<'_>>,
    ids: &wgpu::Buffer,
) -> Vec<[f64; 2]> {
    let q: Vec<f32> = (0..n * d)
        .map(|i| if i % d < d / 2 { 1.0 } else { 0.0 })
        .collect();
    let layout = Layout::rows(n as u64, d as u64);
    let got = run_on_buffer(&q, |encoder, buffer| {
        let view = TensorView::new(buffer, layout);
        ctx()
            .encode_rope(encoder, spec, &view, positions(ArrayView::new(ids)))
            .expect("rope");
    });
    (0..n * d / 2)
        .map(|k| {
            let (t, j) = (k / (d / 2), k % (d / 2));
            [f64::from(got[t * d + j]), f64::from(got[t * d + j + d / 2])]
        })
        .collect()
}

/// The fraction of `(cos, sin)` equal to HF's bf16 values, and the largest difference in
/// units of what may differ: one bf16 unit of HF's value, plus HF's own f32 error there (its
/// angle `p f` rounded to f32, `far(t)` its largest magnitude at token `t`, then its f32 sine).
fn against_hf(
    got: &[[f64; 2]],
    hf: &Value,
    tokens: std::ops::Range<usize>,
    pairs: usize,
    far: impl Fn(usize) -> f64,
) -> (f64, f64) {
    let (mut equal, mut total, mut worst) = (0usize, 0usize, 0.0f64);
    for t in tokens {
        let (c, s) = (list(&hf["cos"][t]), list(&hf["sin"][t]));
        let own = far(t) * 2f64.powi(-24) + 2f64.powi(-24);
        for j in 0..pairs {
            for (mine, theirs) in [(got[t * pairs + j][0], c[j]), (got[t * pairs + j][1], s[j])] {
                total += 1;
                equal += usize::from(mine == theirs);
                worst = worst.max((mine - theirs).abs() / (bf16_ulp(theirs) + own));
            }
        }
    }
    (equal as f64 / total as f64, worst)
}

#[test]
fn bf16_cos_and_sin_are_what_hf_returns_in_a_bf16_model() {
    let data = test_data("hf/hf_bf16_cos_sin.json");
    // Pixtral's tower: a 48 x 64 patch grid at (row, column).
    let pixtral = &data["pixtral"];
    let modules = RotaryModule::from_hf_vision_config(&pixtral["config"]).expect("pixtral");
    let (spec, d) = (modules[0].spec.clone(), modules[0].head_dim as usize);
    let axes = [
        GridAxis::constant(0),
        GridAxis::index(0),
        GridAxis::index(1),
    ];
    let grid = PositionGrid::new(3).then(GridSegment::new(&[48, 64], &axes));
    let n = grid.tokens() as usize;
    let words: Vec<u32> = grid
        .positions(1)
        .expect("grid")
        .iter()
        .map(|p| p.to_bits())
        .collect();
    let ids = u32_buffer(&words);
    let rounded = applied(
        &spec.clone().cos_sin_bf16(true),
        n,
        d,
        |v| Positions::FloatAxes(v),
        &ids,
    );
    let far = |t: usize| (t / 64 + t % 64) as f64;
    let (same, worst) = against_hf(&rounded, pixtral, 0..n, d / 2, far);
    // HF's f32 angles and sines, then its bf16 cast: a value within their error of a bf16
    // midpoint rounds the other way; every one within one bf16 unit.
    assert!(
        same >= 0.999 && worst <= 1.0,
        "Pixtral: {same} equal, {worst} bf16 units"
    );
    let plain = applied(&spec, n, d, |v| Positions::FloatAxes(v), &ids);
    let (same_f32, _) = against_hf(&plain, pixtral, 0..n, d / 2, far);
    assert!(
        same_f32 < 0.2,
        "f32 cos and sin equal HF's bf16 ones at {same_f32}"
    );
    // The reference rounds the real-number values: the GPU's f32 cos and sin are within
    // 1.5e-7 of them, so they round alike but where one is that close to a midpoint.
    let mut x: Vec<f64> = (0..n * d)
        .map(|i| if i % d < d / 2 { 1.0 } else { 0.0 })
        .collect();
    let host = Positions::FloatAxes(&words[..]);
    reference::rope(
        &spec.clone().cos_sin_bf16(true),
        &Layout::rows(n as u64, d as u64),
        &mut x,
        host,
    );
    let mut differ = 0;
    for (k, pair) in rounded.iter().enumerate() {
        let (t, j) = (k / (d / 2), k % (d / 2));
        for (mine, want) in [(pair[0], x[t * d + j]), (pair[1], x[t * d + j + d / 2])] {
            assert!(
                (mine - want).abs() <= bf16_ulp(want),
                "token {t} pair {j}: {mine} vs {want}"
            );
            differ += usize::from(mine != want);
        }
    }
    assert!(
        differ * 1000 <= n * d,
        "{differ} of {} from the reference",
        n * d
    );
    eprintln!(
        "Pixtral (bf16): {:.4}% of cos and sin equal to HF's, all within {worst:.2} of a bf16 unit; f32 ones \
         {:.1}%; {differ} of {} off the reference's rounding by one unit",
        100.0 * same,
        100.0 * same_f32,
        n * d
    );
    // Llama: 1-D ids 0..1023, then up to 131 071.
    let llama = &data["llama"];
    let d = 128;
    let spec = RopeSpec::from_hf_config(&llama["config"], d as u64)
        .expect("llama")
        .cos_sin_bf16(true);
    let positions: Vec<u32> = list(&llama["positions"])
        .iter()
        .map(|&p| p as u32)
        .collect();
    let ids = u32_buffer(&positions);
    let got = applied(&spec, positions.len(), d, |v| Positions::Ids(v), &ids);
    let at = |t: usize| f64::from(positions[t]);
    let (near, worst_near) = against_hf(&got, llama, 0..1024, d / 2, at);
    assert!(
        near >= 0.995 && worst_near <= 1.0,
        "Llama below 1024: {near} equal, {worst_near} units"
    );
    let (far, worst_far) = against_hf(&got, llama, 1024..positions.len(), d / 2, at);
    eprintln!(
        "Llama (bf16): {:.4}% equal to HF's below position 1024 (within {worst_near:.2} of a bf16 \
         unit and HF's f32 error), {:.2}% from 8 191 to 131 071 (within {worst_far:.2}: HF's f32 \
         angles, the crate's exact)",
        100.0 * near,
        100.0 * far
    );
}

/// Q and K in one call and out of place, with cos and sin rounded: against the reference
/// (which rounds the real-number values), each element within 4e-7 but where the GPU's f32
/// cos or sin rounded the other way at a bf16 midpoint; the fused call refuses the option.
#[test]
fn bf16_cos_and_sin_with_k_and_out_of_place_and_refused_by_the_fused_call() {
    use super::common::{Rng, guarded_input, run_on_buffers, widen};
    use wgpu_posenc::{CacheIndex, Error, KvCache, QkvCall, RopeCall};
    let spec = RopeSpec::new().base(500_000.0).cos_sin_bf16(true);
    let shape = [2, 3, 37, 64];
    let layout = Layout::bhsd(shape);
    let mut rng = Rng::new(1616);
    let (q, k) = (
        guarded_input(&mut rng, &layout, 0),
        guarded_input(&mut rng, &layout, 0),
    );
    let ids: Vec<u32> = (0..2 * 37).map(|i| (i * 7919) % 60_000).collect();
    let id_buf = u32_buffer(&ids);
    let out = run_on_buffers(&[&q, &k, &vec![0.0; q.len()]], |encoder, bufs| {
        let positions = Positions::Ids(ArrayView::new(&id_buf));
        let both = RopeCall::new(TensorView::new(&bufs[0], layout), positions)
            .with_k(TensorView::new(&bufs[1], layout));
        ctx()
            .encode_rope_call(encoder, &spec, &both)
            .expect("q and k");
        let copy = RopeCall::new(TensorView::new(&bufs[1], layout), positions)
            .with_output(TensorView::new(&bufs[2], layout));
        ctx()
            .encode_rope_call(encoder, &spec, &copy)
            .expect("out of place");
    });
    let mut want_q = widen(&q);
    reference::rope(&spec, &layout, &mut want_q, Positions::Ids(&ids));
    let mut want_k = widen(&k);
    reference::rope(&spec, &layout, &mut want_k, Positions::Ids(&ids));
    let mut twice = want_k.clone();
    reference::rope(&spec, &layout, &mut twice, Positions::Ids(&ids));
    let (mut close, mut total) = (0usize, 0usize);
    for (got, want, input) in [
        (&out[0], &want_q, &q),
        (&out[1], &want_k, &k),
        (&out[2], &twice, &k),
    ] {
        for (i, (&g, &w)) in got.iter().zip(want.iter()).enumerate() {
            let e = (f64::from(g) - w).abs();
            // A flipped cos or sin moves the element by a bf16 unit times the pair's size.
            let pair = f64::from(input[i].abs()) + 4.0;
            assert!(e <= 4e-7 + pair * 2f64.powi(-8), "element {i}: {g} vs {w}");
            close += usize::from(e <= 4e-7 * (1.0 + w.abs()));
            total += 1;
        }
    }
    assert!(
        close * 1000 >= total * 999,
        "{close} of {total} within 4e-7"
    );
    // The fused call keeps its cos and sin in f32.
    let rope = ctx().rope(&spec, 64).expect("rope");
    let qkv = u32_buffer(&vec![0; 2 * 5 * 37 * 64]);
    let cache = u32_buffer(&vec![0; 2 * 64 * 64]);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let call = QkvCall::new(
        TensorView::new(&qkv, Layout::bhsd([2, 5, 37, 64])),
        1,
        Positions::Ids(ArrayView::new(&id_buf)),
        KvCache {
            k: TensorView::new(&cache, Layout::bhsd([2, 1, 32, 64])),
            v: TensorView::new(
                &cache,
                Layout::bhsd([2, 1, 32, 64]).with_offset(2 * 32 * 64),
            ),
            index: CacheIndex::Position,
            overflow_flag: None,
        },
    );
    let e = rope.encode_qkv(&mut encoder, &call).expect_err("fused");
    assert!(
        matches!(e, Error::Unsupported(m) if m.contains("cos_sin_bf16")),
        "{e}"
    );
}
