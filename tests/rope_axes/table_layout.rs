//! Cos and sin tables laid out for the other pair layout ([`RopeSpec::table_layout`]: each
//! lane at the angle of its place in the model's table, ERNIE-Image's and V-JEPA 2's form):
//! against the f64 reference, in place with K and out of place, at u32, f32 and 1-D
//! positions; not a rotation (pairs change length); the pairs' own layout the plain
//! rotation bit for bit; refused where it cannot run.

use super::axes_of;
use super::common::{Rng, assert_matches, ctx, guarded_input, run_on_buffers, u32_buffer, widen};
use wgpu_posenc::{
    ArrayView, CacheIndex, CosSinCache, Error, HostPositions, KvCache, Layout, PairLayout,
    Positions, QkvCall, RopeCall, RopeSpec, TensorView, reference,
};

/// Q and K turned by `spec` in one call, and the same Q out of place into a third buffer,
/// at `words` (axes, or 1-D ids where `axes` is false), each against the reference; Q's
/// output bits.
fn check(spec: &RopeSpec, [b, h, s, d]: [u64; 4], words: &[u32], axes: bool) -> Vec<u32> {
    let lq = Layout::bhsd([b, h, s, d]).with_offset(3);
    let lk = Layout::strided([b, h, s, d], [h * s * (d + 2), d + 2, h * (d + 2)]).with_offset(5);
    let mut rng = Rng::new(d + s);
    let (q, k) = (
        guarded_input(&mut rng, &lq, 4),
        guarded_input(&mut rng, &lk, 4),
    );
    let out0 = vec![f32::from_bits(0x7fc0_0bad); q.len()];
    let ids = u32_buffer(words);
    let view = |ids| match axes {
        true => axes_of(ids, true),
        false => Positions::Ids(ids),
    };
    let host = |w| match axes {
        true => axes_of(w, true),
        false => HostPositions::Ids(w),
    };
    let out = run_on_buffers(&[&q, &k, &out0], |encoder, bufs| {
        let call = RopeCall::new(TensorView::new(&bufs[0], lq), view(ArrayView::new(&ids)))
            .with_k(TensorView::new(&bufs[1], lk));
        ctx().encode_rope_call(encoder, spec, &call).expect("Q+K");
    });
    let copy = run_on_buffers(&[&q, &out0], |encoder, bufs| {
        let call = RopeCall::new(TensorView::new(&bufs[0], lq), view(ArrayView::new(&ids)))
            .with_output(TensorView::new(&bufs[1], lq));
        ctx()
            .encode_rope_call(encoder, spec, &call)
            .expect("out of place");
    });
    for (input, got, l, what) in [
        (&q, &out[0], &lq, "Q"),
        (&k, &out[1], &lk, "K"),
        (&q, &copy[1], &lq, "Q out of place"),
    ] {
        let mut want = widen(input);
        reference::rope(spec, l, &mut want, host(words));
        // Out of place, the lanes around the view are the output buffer's poison.
        let input = if what == "Q out of place" {
            &out0
        } else {
            input
        };
        let mut want_all = widen(input);
        copy_view(l, &want, &mut want_all);
        let worst = assert_matches(input, got, &want_all, 3e-7, &format!("{what} {spec:?}"));
        assert!(worst > 0.0, "{what}: nothing turned");
    }
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    assert!(bits(&copy[0]) == bits(&q), "the source is left as it was");
    out[0].iter().map(|v| v.to_bits()).collect()
}

/// `want`'s elements of the view `l` written over `all` (the rest kept).
fn copy_view(l: &Layout, want: &[f64], all: &mut [f64]) {
    let [b, h, s, d] = l.shape;
    for i in 0..b * h * s * d {
        let (bi, hi, si, di) = (i / (h * s * d), i / (s * d) % h, i / d % s, i % d);
        let at =
            (l.offset + bi * l.strides[0] + hi * l.strides[1] + si * l.strides[2] + di) as usize;
        all[at] = want[at];
    }
}

/// Random positions: `n` f32 values (negative and fractional, up to 2e3), or u32 ids.
fn positions(n: u64, float: bool, seed: u64) -> Vec<u32> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| match float {
            true => ((rng.next_u64() as f64 / u64::MAX as f64 - 0.5) as f32 * 4e3).to_bits(),
            false => rng.range(0, 1 << 16) as u32,
        })
        .collect()
}

/// ERNIE-Image's form (three axes, half-split pairs, the table interleaved), V-JEPA 2's
/// (interleaved pairs, the table half-split in one block an axis, a rotary tail) and a 1-D
/// head with a table of the other layout, each both ways round.
#[test]
fn tables_of_the_other_layout_match_the_reference() {
    let (b, h, s) = (2u64, 3u64, 29u64);
    let ernie = RopeSpec::new()
        .axes_rope([8, 12, 12])
        .base(256.0)
        .table_layout(PairLayout::Interleaved);
    let vjepa = RopeSpec::new()
        .axes_rope([10, 10, 10])
        .pair_layout(PairLayout::Interleaved)
        .pair_blocks(3)
        .rotary_dim(60)
        .table_layout(PairLayout::HalfSplit);
    let one_d = RopeSpec::new().pair_layout(PairLayout::Interleaved);
    let cases = [
        (ernie.clone(), 64, true),
        (vjepa, 64, true),
        (one_d.clone().table_layout(PairLayout::HalfSplit), 48, false),
        (
            RopeSpec::new().table_layout(PairLayout::Interleaved),
            40,
            false,
        ),
    ];
    for (i, (spec, d, axes)) in cases.into_iter().enumerate() {
        let n = if axes { 3 * b * s } else { b * s };
        let words = positions(n, axes, i as u64);
        let got = check(&spec, [b, h, s, d], &words, axes);
        // Not a rotation: the plain spec's result differs.
        // (Interleaved pairs take blocks only for a table's layout.)
        let mut plain = spec.clone();
        plain.table_layout = None;
        if plain.pair_layout == PairLayout::Interleaved {
            plain.pair_blocks = 1;
        }
        let other = check(&plain, [b, h, s, d], &words, axes);
        let apart = got
            .iter()
            .zip(&other)
            .map(|(&a, &b)| (f32::from_bits(a) - f32::from_bits(b)).abs())
            .fold(0.0f32, f32::max);
        assert!(apart > 1e-2, "{spec:?}: {apart} from the rotation");
        // The pairs' own layout named as the table's is the rotation, bit for bit.
        let own = plain.clone().table_layout(spec.pair_layout);
        assert!(check(&own, [b, h, s, d], &words, axes) == other, "{spec:?}");
    }
}

/// With a learned table, the inverse, HF's pair-halves order, a cos/sin cache or in the
/// fused call: typed errors.
#[test]
fn tables_of_the_other_layout_refused_where_they_cannot_run() {
    let spec = RopeSpec::new()
        .axes_rope([8, 12, 12])
        .table_layout(PairLayout::Interleaved);
    let layout = Layout::bhsd([1, 2, 5, 64]);
    let mut data = vec![0.5f32; layout.end().expect("layout") as usize];
    let host = vec![1u32; 3 * 5];
    let table = wgpu_posenc::LearnedFrequencies::new(3, 1, vec![0.1; 3 * 32]);
    let interleaved = RopeSpec::new()
        .pair_layout(PairLayout::Interleaved)
        .output_order(wgpu_posenc::OutputOrder::PairHalves);
    for bad in [
        RopeSpec::new()
            .learned(table)
            .table_layout(PairLayout::Interleaved),
        spec.clone().inverse(true),
        interleaved.table_layout(PairLayout::HalfSplit),
    ] {
        let e = ctx()
            .rope_host(&bad, layout, &mut data, Positions::Axes(&host))
            .expect_err("refused");
        assert!(e.to_string().contains("table_layout"), "{bad:?}: {e}");
    }
    // The fused call turns both elements of a pair by one angle.
    let rope = ctx().rope(&spec, 64).expect("rope");
    let qkv = u32_buffer(&vec![0; 5 * 5 * 64]);
    let cache = u32_buffer(&vec![0; 2 * 8 * 64]);
    let ids = u32_buffer(&host);
    let kv = Layout::bhsd([1, 1, 8, 64]);
    let call = QkvCall::new(
        TensorView::new(&qkv, Layout::bhsd([1, 5, 5, 64])),
        1,
        Positions::Axes(ArrayView::new(&ids)),
        KvCache {
            k: TensorView::new(&cache, kv),
            v: TensorView::new(&cache, kv.with_offset(8 * 64)),
            index: CacheIndex::Position,
            overflow_flag: None,
        },
    );
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let e = rope.encode_qkv(&mut encoder, &call).expect_err("fused");
    assert!(
        matches!(&e, Error::Unsupported(m) if m.contains("table_layout")),
        "{e}"
    );
    // A cos/sin cache has one angle a pair.
    let buf = u32_buffer(&vec![0; 64 * 64]);
    let flag = u32_buffer(&[0]);
    let call = RopeCall::new(
        TensorView::new(&buf, layout),
        Positions::Ids(ArrayView::new(&ids)),
    )
    .with_cache(CosSinCache {
        overflow_flag: Some(ArrayView::new(&flag)),
        ..CosSinCache::vllm(&buf, 64, 64)
    });
    let plain = RopeSpec::new().table_layout(PairLayout::Interleaved);
    let e = ctx()
        .encode_rope_call(&mut encoder, &plain, &call)
        .expect_err("cache");
    assert!(
        matches!(&e, Error::Unsupported(m) if m.contains("table_layout")),
        "{e}"
    );
}
