//! Pooled positions ([`RopeSpec::pooled`]: each pair's cos and sin averaged over `pool`
//! sets of position axes, Helios' and FramePack's history tokens): against the f64
//! reference on random positions, u32 and f32, three and four axes, both pair layouts, Q and
//! K in one dispatch with guards; a token whose sets repeat one position rotates bit for bit
//! as unpooled; refused where it cannot run.

use super::axes_of;
use super::common::{Rng, assert_matches, ctx, guarded_input, run_on_buffers, u32_buffer, widen};
use wgpu_posenc::{
    ArrayView, CacheIndex, CosSinCache, Error, KvCache, Layout, PairLayout, Positions, QkvCall,
    RopeCall, RopeSpec, TensorView, reference,
};

/// Q and K rotated by `spec` in one call at `words` (`[pool, planes, batch, seq]`); the
/// outputs, after checking them against the reference within `tol`.
fn check(spec: &RopeSpec, [b, h, s, d]: [u64; 4], words: &[u32], float: bool) -> Vec<u32> {
    let lq = Layout::bhsd([b, h, s, d]).with_offset(3);
    let lk = Layout::strided([b, h, s, d], [h * s * (d + 2), d + 2, h * (d + 2)]).with_offset(5);
    let mut rng = Rng::new(d + s);
    let (q, k) = (
        guarded_input(&mut rng, &lq, 4),
        guarded_input(&mut rng, &lk, 4),
    );
    let ids = u32_buffer(words);
    let out = run_on_buffers(&[&q, &k], |encoder, bufs| {
        let positions = axes_of(ArrayView::new(&ids), float);
        let call = RopeCall::new(TensorView::new(&bufs[0], lq), positions)
            .with_k(TensorView::new(&bufs[1], lk));
        ctx()
            .encode_rope_call(encoder, spec, &call)
            .expect("encode");
    });
    for (input, got, l, what) in [(&q, &out[0], &lq, "Q"), (&k, &out[1], &lk, "K")] {
        let mut want = widen(input);
        reference::rope(spec, l, &mut want, axes_of(words, float));
        let worst = assert_matches(input, got, &want, 3e-7, &format!("{what} {spec:?}"));
        assert!(worst > 0.0, "{what}: nothing rotated");
    }
    // Bits, so that outputs compare equal with their poisoned guards.
    out.iter().flatten().map(|v| v.to_bits()).collect()
}

/// `sets` sets of `planes x n` positions: u32 up to 2^20, or f32 (negative, fractional, up to
/// 3e4), the f32's bits.
fn positions(sets: u64, planes: u64, n: u64, float: bool, seed: u64) -> Vec<u32> {
    let mut rng = Rng::new(seed);
    (0..sets * planes * n)
        .map(|_| match float {
            false => rng.range(0, 1 << 20) as u32,
            true => {
                let u = rng.next_u64() as f64 / u64::MAX as f64 - 0.5;
                ((u * 6e4) as f32).to_bits()
            }
        })
        .collect()
}

/// Every pool over Wan's per-axis lists (three axes, interleaved), FLUX.2's four axes, and
/// Qwen2-VL's shared list over half-split pairs with a rotary tail, u32 and f32 positions.
#[test]
fn pooled_positions_match_the_reference() {
    let specs = [
        (
            RopeSpec::new()
                .axes_rope([22, 21, 21])
                .pair_layout(PairLayout::Interleaved),
            128,
            3,
        ),
        (
            RopeSpec::new()
                .axes_rope4([8, 12, 12, 0])
                .base(2000.0)
                .pair_layout(PairLayout::Interleaved),
            64,
            4,
        ),
        (
            RopeSpec::new()
                .mrope([4, 6, 6], false)
                .rotary_dim(32)
                .base(1e6),
            40,
            3,
        ),
    ];
    let (b, h, s) = (2u64, 3u64, 37u64);
    for (i, (spec, d, planes)) in specs.into_iter().enumerate() {
        for pool in [2u32, 4, 8] {
            for float in [false, true] {
                let seed = 100 * i as u64 + u64::from(pool) + u64::from(float);
                let words = positions(u64::from(pool), planes, b * s, float, seed);
                check(&spec.clone().pooled(pool), [b, h, s, d], &words, float);
            }
        }
    }
}

/// A pool of sets that all repeat one set rotates bit for bit as that set unpooled (the
/// sums in pairs are exact: `2c + 2c = 4c`); sets that repeat two positions, `(a, b, a, b)`,
/// as a pool of 2 over `(a, b)`.
#[test]
fn repeated_sets_rotate_as_fewer() {
    let spec = RopeSpec::new()
        .axes_rope([8, 12, 12])
        .pair_layout(PairLayout::Interleaved);
    let (b, h, s, d) = (1u64, 2u64, 61u64, 64u64);
    for float in [false, true] {
        let one = positions(1, 3, b * s, float, 9);
        let two = positions(2, 3, b * s, float, 10);
        let plain = check(&spec, [b, h, s, d], &one, float);
        let four: Vec<u32> = one.repeat(4);
        assert!(check(&spec.clone().pooled(4), [b, h, s, d], &four, float) == plain);
        let eight: Vec<u32> = one.repeat(8);
        assert!(check(&spec.clone().pooled(8), [b, h, s, d], &eight, float) == plain);
        let pooled2 = check(&spec.clone().pooled(2), [b, h, s, d], &two, float);
        let abab: Vec<u32> = two.repeat(2);
        assert!(check(&spec.clone().pooled(4), [b, h, s, d], &abab, float) == pooled2);
    }
}

/// Pools other than 1, 2, 4 and 8, pools without position axes, with a learned table or a
/// cos/sin cache, in the fused call, and positions short of every set: typed errors.
#[test]
fn pooled_positions_refused_where_they_cannot_run() {
    let spec = RopeSpec::new().axes_rope([8, 12, 12]);
    let (layout, n) = (Layout::bhsd([1, 2, 5, 64]), 5usize);
    let mut data = vec![0.5f32; layout.end().expect("layout") as usize];
    let host = vec![1u32; 4 * 3 * n];
    let rope = |spec: &RopeSpec, data: &mut [f32], words: &[u32]| {
        ctx().rope_host(spec, layout, data, Positions::Axes(words))
    };
    for pool in [0u32, 3, 5, 16] {
        let e = rope(&spec.clone().pooled(pool), &mut data, &host).expect_err("pool");
        assert!(
            matches!(e, Error::InvalidParameter { what: "pool", .. }),
            "{pool}: {e}"
        );
    }
    let e = ctx()
        .rope_host(
            &RopeSpec::new().pooled(2),
            layout,
            &mut data,
            Positions::Ids(&host[..n]),
        )
        .expect_err("1-D");
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
    let table = wgpu_posenc::LearnedFrequencies::new(3, 1, vec![0.1; 3 * 32]);
    let e = rope(&RopeSpec::new().learned(table).pooled(2), &mut data, &host).expect_err("table");
    assert!(e.to_string().contains("pooled"), "{e}");
    // Four sets of three planes: eleven planes' worth is short.
    let e = rope(&spec.clone().pooled(4), &mut data, &host[..11 * n]).expect_err("short");
    assert!(matches!(e, Error::PositionIdsTooShort { .. }), "{e}");
    rope(&spec.clone().pooled(4), &mut data, &host).expect("every set");
    // The fused call rotates each token at one position.
    let rope = ctx().rope(&spec.clone().pooled(2), 64).expect("rope");
    let qkv = u32_buffer(&vec![0; 5 * n * 64]);
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
        matches!(e, Error::Unsupported(m) if m.contains("pooled")),
        "{e}"
    );
    // A cos/sin cache has one row a position.
    let table = u32_buffer(&vec![0; 64 * 64]);
    let flag = u32_buffer(&[0]);
    let cos_sin = CosSinCache {
        overflow_flag: Some(ArrayView::new(&flag)),
        ..CosSinCache::vllm(&table, 64, 64)
    };
    let call = RopeCall::new(
        TensorView::new(&qkv, layout),
        Positions::Axes(ArrayView::new(&ids)),
    )
    .with_cache(cos_sin);
    let e = ctx()
        .encode_rope_call(&mut encoder, &spec.clone().pooled(2), &call)
        .expect_err("cache");
    assert!(
        matches!(e, Error::Unsupported(m) if m.contains("pooled")),
        "{e}"
    );
}
