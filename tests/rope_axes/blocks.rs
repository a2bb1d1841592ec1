//! Half-split pairs within blocks of the rotated lanes ([`RopeSpec::pair_blocks`], Gemma 4's
//! vision tower: each axis half-split within its own half of the head), against the f64
//! reference: Q and K in one dispatch and out of place, strided views in poisoned buffers,
//! four pairs an invocation where every block allows it and one where not.

use super::common::{Rng, assert_matches, ctx, guarded_input, run_on_buffers, u32_buffer, widen};
use super::rising::check_qk;
use super::{axes_of, ordered};
use wgpu_posenc::{
    ArrayView, Error, Layout, MRopeOrder, PairLayout, RopeCall, RopeSpec, TensorView, reference,
};

/// Random positions on three planes for `n` tokens: u32 below 2^20, and f32 (fractional,
/// negative, far).
fn positions(n: usize) -> (Vec<u32>, Vec<u32>) {
    let mut rng = Rng::new(2032);
    let ints = (0..3 * n).map(|_| rng.range(0, 1 << 20) as u32).collect();
    let floats = (0..3 * n)
        .map(|i| {
            let u = rng.next_u64() as f64 / u64::MAX as f64;
            let v = match i % 3 {
                0 => u * 2.0 - 1.0,
                1 => (u - 0.5) * 1e4,
                _ => (u * 64.0).floor(),
            };
            (v as f32).to_bits()
        })
        .collect();
    (ints, floats)
}

/// The block specs: Gemma 4's (width then height, one block each, 16 pairs: vec4 groups),
/// blocks of 18 pairs (one pair an invocation), three blocks on three axes, and blocks of
/// one axis's pairs with a tail after them.
fn cases() -> Vec<(RopeSpec, u64)> {
    vec![
        (
            ordered([0, 16, 16], MRopeOrder::WhtChunks, true).pair_blocks(2),
            64,
        ),
        (
            ordered([0, 18, 18], MRopeOrder::WhtChunks, true).pair_blocks(2),
            72,
        ),
        (RopeSpec::new().axes_rope([12, 12, 12]).pair_blocks(3), 72),
        (
            RopeSpec::new()
                .axes_rope([8, 8, 8])
                .pair_blocks(6)
                .rotary_dim(48),
            60,
        ),
    ]
}

#[test]
fn pairs_in_blocks_match_the_reference() {
    let (b, s) = (2u64, 19u64);
    let (ints, floats) = positions((b * s) as usize);
    for (spec, d) in cases() {
        for (words, float) in [(&ints, false), (&floats, true)] {
            check_qk(&spec, [b, s, d], words, float);
        }
        check_out_of_place(&spec, [b, s, d], &floats);
        check_aligned(&spec, [b, s, d], &ints);
    }
}

/// In place over an aligned BHSD view: four pairs an invocation where the blocks' pairs
/// come in fours (16 and 12 a block), one where not (18, and 4 with a tail of 12 lanes
/// in rows of 60).
fn check_aligned(spec: &RopeSpec, [b, s, d]: [u64; 3], words: &[u32]) {
    let layout = Layout::bhsd([b, 2, s, d]).with_offset(8);
    let input = guarded_input(&mut Rng::new(d + 2), &layout, 8);
    let ids = u32_buffer(words);
    let out = run_on_buffers(&[&input], |encoder, bufs| {
        let view = TensorView::new(&bufs[0], layout);
        ctx()
            .encode_rope(encoder, spec, &view, axes_of(ArrayView::new(&ids), false))
            .expect("encode");
    });
    let mut want = widen(&input);
    reference::rope(spec, &layout, &mut want, axes_of(words, false));
    assert_matches(&input, &out[0], &want, 2.5e-7, &format!("aligned {spec:?}"));
}

/// Out of place from a BSHD source into a BHSD destination: the rotated pairs in their
/// blocks, the tail copied, nothing else written.
fn check_out_of_place(spec: &RopeSpec, [b, s, d]: [u64; 3], words: &[u32]) {
    let src_layout = Layout::strided([b, 2, s, d], [2 * s * d, d, 2 * d]);
    let dst_layout = Layout::bhsd([b, 2, s, d]).with_offset(3);
    let mut rng = Rng::new(d + 1);
    let src = guarded_input(&mut rng, &src_layout, 4);
    let dst = guarded_input(&mut rng, &dst_layout, 4);
    let ids = u32_buffer(words);
    let out = run_on_buffers(&[&src, &dst], |encoder, bufs| {
        let call = RopeCall::new(
            TensorView::new(&bufs[0], src_layout),
            axes_of(ArrayView::new(&ids), true),
        )
        .with_output(TensorView::new(&bufs[1], dst_layout));
        ctx()
            .encode_rope_call(encoder, spec, &call)
            .expect("encode");
    });
    let mut want = widen(&dst);
    let host = axes_of(words, true);
    reference::rope_out(
        spec,
        &src_layout,
        &widen(&src),
        &dst_layout,
        &mut want,
        host,
        None,
    );
    assert_matches(
        &dst,
        &out[1],
        &want,
        2.5e-7,
        &format!("out of place {spec:?}"),
    );
    assert!(
        out[0]
            .iter()
            .zip(&src)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "source written"
    );
}

/// The element mapping itself: Gemma 4's head of 64 in two blocks pairs lane 3 with 19 and
/// lane 35 with 51; one block is the plain half split.
#[test]
fn pair_elements_stay_in_their_block() {
    let gemma = RopeSpec::new().axes_rope([0, 16, 16]).pair_blocks(2);
    assert_eq!(gemma.pair_elements(64, 3), (3, 19));
    assert_eq!(gemma.pair_elements(64, 19), (35, 51));
    let plain = RopeSpec::new();
    assert_eq!(plain.pair_elements(64, 19), (19, 51));
}

/// Blocks that do not divide the pairs, zero blocks, blocks of interleaved pairs and blocks
/// in the fused call are typed errors.
#[test]
fn pair_blocks_are_refused_where_they_cannot_run() {
    let three = RopeSpec::new().pair_blocks(3);
    let e = ctx()
        .rope(&three, 64)
        .map(drop)
        .expect_err("3 blocks of 32 pairs");
    assert!(
        matches!(
            e,
            Error::InvalidParameter {
                what: "pair_blocks",
                ..
            }
        ),
        "{e}"
    );
    let e = ctx()
        .rope(&RopeSpec::new().pair_blocks(0), 64)
        .map(drop)
        .expect_err("none");
    assert!(
        matches!(
            e,
            Error::InvalidParameter {
                what: "pair_blocks",
                ..
            }
        ),
        "{e}"
    );
    let interleaved = RopeSpec::new()
        .pair_layout(PairLayout::Interleaved)
        .pair_blocks(2);
    let e = ctx()
        .rope(&interleaved, 64)
        .map(drop)
        .expect_err("interleaved");
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
    let device = ctx().device();
    let buffer = |size: u64| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        })
    };
    let shape = wgpu_posenc::Dims {
        batch: 1,
        seq: 4,
        heads: 3,
        head_dim: 64,
    };
    let one = Layout::bshd(wgpu_posenc::Dims { heads: 1, ..shape });
    let (qkv, kc, vc) = (buffer(4096), buffer(1024), buffer(1024));
    let cache = wgpu_posenc::KvCache {
        k: TensorView::new(&kc, one),
        v: TensorView::new(&vc, one),
        index: wgpu_posenc::CacheIndex::Position,
        overflow_flag: None,
    };
    let call = wgpu_posenc::QkvCall::new(
        TensorView::new(&qkv, Layout::bshd(shape)),
        1,
        wgpu_posenc::Positions::Start(0),
        cache,
    );
    let mut encoder = device.create_command_encoder(&Default::default());
    let e = ctx()
        .rope(&RopeSpec::new().pair_blocks(2), 64)
        .and_then(|r| r.encode_qkv(&mut encoder, &call))
        .expect_err("fused");
    assert!(e.to_string().contains("pair_blocks"), "{e}");
}
