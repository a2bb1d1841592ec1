//! A caller's dense frequency table ([`RopeSpec::learned`], Mochi's learned `[3, heads,
//! pairs]`): each pair of each head turns by the sum over the axes of position times its
//! entry, against the f64 reference: per-head and one-head tables, signed entries, u32 and
//! f32 positions, Q and K in one dispatch, heads cut into blocks by a small binding, out of
//! place, 1-D; refused where it cannot run.

use super::axes_of;
use super::common::{Rng, assert_matches, ctx, guarded_input, run_on_buffers, u32_buffer, widen};
use wgpu_posenc::{
    ArrayView, Error, Layout, LearnedFrequencies, PosEnc, Positions, RopeCall, RopeSpec, Scaling,
    TensorView, reference,
};

/// A table of signed entries: most below 1 in magnitude, some fast (up to 40 rad a position).
fn table(axes: u64, heads: u64, pairs: u64, seed: u64) -> LearnedFrequencies {
    let mut rng = Rng::new(seed);
    let values = (0..axes * heads * pairs)
        .map(|i| {
            let u = rng.next_u64() as f64 / u64::MAX as f64 * 2.0 - 1.0;
            if i % 7 == 3 { 40.0 * u } else { u }
        })
        .collect();
    LearnedFrequencies::new(axes, heads, values)
}

/// Q and K (`heads` each) rotated in one call by `spec` through `enc`, against the reference.
fn check(enc: &PosEnc, spec: &RopeSpec, [b, h, s, d]: [u64; 4], words: &[u32], float: bool) {
    let lq = Layout::bhsd([b, h, s, d]).with_offset(4);
    let lk = Layout::strided([b, h, s, d], [h * s * (d + 2), d + 2, h * (d + 2)]).with_offset(1);
    let mut rng = Rng::new(d + h);
    let (q, k) = (
        guarded_input(&mut rng, &lq, 4),
        guarded_input(&mut rng, &lk, 4),
    );
    let ids = u32_buffer(words);
    let planes = spec.learned.as_ref().map_or(1, |t| t.axes);
    let kind = |v| match (planes, float) {
        (1, false) => Positions::Ids(v),
        (1, true) => Positions::Float(v),
        _ => axes_of(v, float),
    };
    let out = run_on_buffers(&[&q, &k], |encoder, bufs| {
        let call = RopeCall::new(TensorView::new(&bufs[0], lq), kind(ArrayView::new(&ids)))
            .with_k(TensorView::new(&bufs[1], lk));
        enc.encode_rope_call(encoder, spec, &call).expect("encode");
    });
    for (input, got, l, what) in [(&q, &out[0], &lq, "Q"), (&k, &out[1], &lk, "K")] {
        let mut want = widen(input);
        let host = match (planes, float) {
            (1, false) => Positions::Ids(words),
            (1, true) => Positions::Float(words),
            _ => axes_of(words, float),
        };
        reference::rope(spec, l, &mut want, host);
        let worst = assert_matches(input, got, &want, 2.5e-7, &format!("{what} {spec:?}"));
        assert!(worst > 0.0, "{what}: nothing rotated");
    }
}

fn positions(n: usize, seed: u64) -> (Vec<u32>, Vec<u32>) {
    let mut rng = Rng::new(seed);
    let ints = (0..n).map(|_| rng.range(0, 1 << 24) as u32).collect();
    let floats = (0..n)
        .map(|i| {
            let u = rng.next_u64() as f64 / u64::MAX as f64 - 0.5;
            let v = if i % 2 == 0 { u * 60.0 } else { u * 3e5 };
            (v as f32).to_bits()
        })
        .collect();
    (ints, floats)
}

/// Mochi's form (three axes, a table per head), a one-head table, and a 1-D table, both
/// pair layouts, u32 and f32 positions; the per-head table also with a binding so small
/// that the heads are rotated in blocks (each block's first head offsets the table).
#[test]
fn learned_tables_match_the_reference() {
    let (b, h, s) = (2u64, 4u64, 13u64);
    let n = (b * s) as usize;
    let (ints3, floats3) = positions(3 * n, 7);
    let (ints1, floats1) = positions(n, 8);
    let capped = ctx().clone().with_max_binding_size(8 << 10);
    for pair in [
        wgpu_posenc::PairLayout::HalfSplit,
        wgpu_posenc::PairLayout::Interleaved,
    ] {
        let base = RopeSpec::new().pair_layout(pair);
        for (spec, d, words) in [
            (
                base.clone().learned(table(3, h, 16, 1)),
                32,
                (&ints3, &floats3),
            ),
            (
                base.clone().learned(table(3, 1, 12, 2)).rotary_dim(24),
                28,
                (&ints3, &floats3),
            ),
            (
                base.clone().learned(table(1, h, 8, 3)),
                16,
                (&ints1, &floats1),
            ),
        ] {
            check(ctx(), &spec, [b, h, s, d], words.0, false);
            check(ctx(), &spec, [b, h, s, d], words.1, true);
        }
        let spec = base.learned(table(3, h, 32, 4));
        check(
            &capped,
            &spec,
            [b, h, 40, 64],
            &positions(3 * 80, 9).0,
            false,
        );
    }
}

/// Out of place, and in revolutions a position.
#[test]
fn learned_tables_out_of_place_and_in_revolutions() {
    let (b, h, s, d) = (1u64, 2u64, 9u64, 16u64);
    let (_, floats) = positions(3 * (b * s) as usize, 10);
    let spec = RopeSpec::new()
        .learned(table(3, h, 8, 5))
        .frequency_unit(wgpu_posenc::FrequencyUnit::Revolutions);
    check(ctx(), &spec, [b, h, s, d], &floats, true);
    let (src_l, dst_l) = (
        Layout::bhsd([b, h, s, d]),
        Layout::bhsd([b, h, s, d]).with_offset(2),
    );
    let mut rng = Rng::new(3);
    let (src, dst) = (
        guarded_input(&mut rng, &src_l, 2),
        guarded_input(&mut rng, &dst_l, 2),
    );
    let ids = u32_buffer(&floats);
    let out = run_on_buffers(&[&src, &dst], |encoder, bufs| {
        let call = RopeCall::new(
            TensorView::new(&bufs[0], src_l),
            axes_of(ArrayView::new(&ids), true),
        )
        .with_output(TensorView::new(&bufs[1], dst_l));
        ctx()
            .encode_rope_call(encoder, &spec, &call)
            .expect("encode");
    });
    let mut want = widen(&dst);
    reference::rope_out(
        &spec,
        &src_l,
        &widen(&src),
        &dst_l,
        &mut want,
        axes_of(&floats, true),
        None,
    );
    assert_matches(&dst, &out[1], &want, 2.5e-7, "out of place");
}

/// Tables of the wrong shape or with non-finite entries, with sections or a scaling, of
/// other heads than the tensor's, and in the fused call or the exported words: typed errors.
#[test]
fn learned_tables_are_refused_where_they_cannot_run() {
    let short = LearnedFrequencies::new(3, 2, vec![0.5; 3 * 2 * 16 - 1]);
    let e = ctx()
        .rope(&RopeSpec::new().learned(short), 32)
        .map(drop)
        .expect_err("short");
    assert!(
        matches!(e, Error::InvalidLearnedTable { values: 95, .. }),
        "{e}"
    );
    let five = LearnedFrequencies::new(5, 1, vec![0.5; 5 * 16]);
    let e = ctx()
        .rope(&RopeSpec::new().learned(five), 32)
        .map(drop)
        .expect_err("five axes");
    assert!(
        matches!(e, Error::InvalidLearnedTable { axes: 5, .. }),
        "{e}"
    );
    let mut nan = table(3, 1, 16, 6);
    nan.values[7] = f64::NAN;
    let e = ctx()
        .rope(&RopeSpec::new().learned(nan), 32)
        .map(drop)
        .expect_err("NaN");
    assert!(
        matches!(
            e,
            Error::InvalidParameter {
                what: "learned frequency",
                ..
            }
        ),
        "{e}"
    );
    for spec in [
        RopeSpec::new()
            .learned(table(3, 1, 16, 6))
            .axes_rope([4, 6, 6]),
        RopeSpec::new()
            .learned(table(3, 1, 16, 6))
            .scaling(Scaling::Linear { factor: 2.0 }),
    ] {
        let e = ctx()
            .rope(&spec, 32)
            .map(drop)
            .expect_err("sections or scaling");
        assert!(matches!(e, Error::Unsupported(_)), "{e}");
    }
    let e = RopeSpec::new()
        .learned(table(3, 1, 16, 6))
        .angle_words(32, 1)
        .map(drop)
        .expect_err("angle words");
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
    // Three heads of a four-head table.
    let device = ctx().device();
    let buf = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 1 << 14,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let ids = u32_buffer(&[0; 3 * 8]);
    let view = TensorView::new(&buf, Layout::bhsd([1, 3, 8, 32]));
    let spec = RopeSpec::new().learned(table(3, 4, 16, 6));
    let mut encoder = device.create_command_encoder(&Default::default());
    let e = ctx()
        .encode_rope(
            &mut encoder,
            &spec,
            &view,
            Positions::Axes(ArrayView::new(&ids)),
        )
        .expect_err("heads");
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
}

/// Mochi's learned RoPE as diffusers runs it (`tests/data/diffusers/mochi_rope.py`: its
/// `MochiRoPE` over a 5 x 24 x 40 latent grid, a `[3, 24, 64]` table): the table as
/// `RopeSpec::learned` at the positions the module made (fractional, centered), 24 heads of
/// 128 over interleaved pairs, against the module's cos and sin at the sampled tokens, and
/// the GPU against the reference.
#[test]
fn mochi_learned_rope_matches_diffusers() {
    let data = super::common::test_data("diffusers/mochi_rope.json");
    let floats = |v: &serde_json::Value| -> Vec<f64> {
        let mut out = Vec::new();
        let mut stack = vec![v];
        while let Some(v) = stack.pop() {
            match v.as_array() {
                Some(a) => stack.extend(a.iter().rev()),
                None => out.push(f64::from(v.as_f64().expect("number") as f32)),
            }
        }
        out
    };
    let (heads, d) = (super::u(&data["heads"]), super::u(&data["head_dim"]));
    let pairs = d / 2;
    let spec = RopeSpec::new()
        .pair_layout(wgpu_posenc::PairLayout::Interleaved)
        .learned(LearnedFrequencies::new(
            3,
            heads,
            floats(&data["pos_frequencies"]),
        ));
    let positions: Vec<Vec<f64>> = data["positions"]
        .as_array()
        .expect("positions")
        .iter()
        .map(floats)
        .collect();
    let n = positions.len();
    let mut words = vec![0u32; 3 * n];
    for (k, p) in positions.iter().enumerate() {
        for a in 0..3 {
            words[a * n + k] = (p[a] as f32).to_bits();
        }
    }
    let shape = wgpu_posenc::Dims {
        batch: 1,
        seq: n as u64,
        heads,
        head_dim: d,
    };
    let q = Rng::new(31).values(n * (heads * d) as usize);
    let got = super::rotate_with(&spec, Layout::bshd(shape), &q, &words, |v| {
        Positions::FloatAxes(v)
    });
    let mut want: Vec<f64> = q.iter().map(|&v| f64::from(v)).collect();
    reference::rope(
        &spec,
        &Layout::bshd(shape),
        &mut want,
        Positions::FloatAxes(&words[..]),
    );
    let ours = got
        .iter()
        .zip(&want)
        .map(|(&a, b)| (f64::from(a) - b).abs())
        .fold(0.0, f64::max);
    assert!(ours <= 4e-7, "GPU {ours:e} from the reference");
    let (cos, sin) = (&data["cos"], &data["sin"]);
    let mut theirs = 0.0f64;
    for (k, p) in positions.iter().enumerate() {
        let (c, s) = (floats(&cos[k]), floats(&sin[k]));
        // f32 angles of up to sum |p_a| max |F| radians: a few units in their last place.
        let far = p.iter().map(|v| v.abs()).sum::<f64>().max(1.0);
        let allowed = 2.0 * (2e-7 + 8.0 * far * 2f64.powi(-24));
        for h in 0..heads as usize {
            let row = (k * heads as usize + h) * d as usize;
            for j in 0..pairs as usize {
                let (a, b) = (f64::from(q[row + 2 * j]), f64::from(q[row + 2 * j + 1]));
                let (cj, sj) = (c[h * pairs as usize + j], s[h * pairs as usize + j]);
                let e0 = (a * cj - b * sj - want[row + 2 * j]).abs();
                let e1 = (a * sj + b * cj - want[row + 2 * j + 1]).abs();
                assert!(
                    e0.max(e1) <= allowed,
                    "token {k} head {h} pair {j}: {e0:e} {e1:e}"
                );
                theirs = theirs.max(e0.max(e1));
            }
        }
    }
    eprintln!(
        "Mochi (MochiRoPE): reference within {theirs:.1e} of diffusers at {n} tokens, GPU {ours:.1e} of the reference"
    );
}
