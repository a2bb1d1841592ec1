//! A fused call encoded again over the same buffers, finding its cached bind group.

use super::GUARD;
use super::common::{Elements, Rng, ctx, u32_buffer};
use wgpu_posenc::reference::{self, HostCacheIndex};
use wgpu_posenc::{
    ArrayView, CacheIndex, Dims, Dtype, HostPositions, KvCache, Layout, Positions, QkvCall,
    RopeSpec, TensorView,
};

#[test]
fn a_repeated_fused_call_reuses_its_bind_group() {
    // A fresh context (empty caches) on the suite's device; a decode step whose positions
    // are in a buffer, encoded three times over the same buffers: the second and third find
    // the first's bind group and frequency buffer, and the result stays the reference's.
    let posenc = wgpu_posenc::PosEnc::new(ctx().device(), ctx().queue()).expect("context");
    let mut rng = Rng::new(78);
    let (batch, q_heads, kv_heads, d) = (2, 4, 2, 32);
    let qkv_layout = Layout::bshd(Dims {
        batch,
        heads: q_heads + 2 * kv_heads,
        seq: 1,
        head_dim: d,
    });
    let q_layout = Layout::bhsd([batch, q_heads, 1, d]);
    let cache_layout = Layout::bhsd([batch, kv_heads, 16, d]);
    let qkv = Elements::new(&mut rng, Dtype::F32, &[(qkv_layout, true)], GUARD).expect("layout");
    let q_out = Elements::new(&mut rng, Dtype::F32, &[(q_layout, false)], GUARD).expect("layout");
    let (k, v) = (
        Elements::new(&mut rng, Dtype::F32, &[(cache_layout, false)], GUARD).expect("layout"),
        Elements::new(&mut rng, Dtype::F32, &[(cache_layout, false)], GUARD).expect("layout"),
    );
    let positions = [5u32, 9];
    let ids = u32_buffer(&positions);
    let spec = RopeSpec::new();
    let call = QkvCall::new(
        TensorView::new(&qkv.buffer, qkv_layout),
        kv_heads,
        Positions::Ids(ArrayView::new(&ids)),
        KvCache {
            k: TensorView::new(&k.buffer, cache_layout),
            v: TensorView::new(&v.buffer, cache_layout),
            index: CacheIndex::Position,
            overflow_flag: None,
        },
    )
    .with_q_out(TensorView::new(&q_out.buffer, q_layout));
    for step in 0..3 {
        let mut encoder = posenc.device().create_command_encoder(&Default::default());
        posenc
            .encode_qkv(&mut encoder, &spec, &call)
            .expect("encode");
        posenc.queue().submit([encoder.finish()]);
        let usage = posenc.cache_usage();
        assert_eq!(
            (usage.bind_groups, usage.frequency_buffers),
            (1, 1),
            "step {step}: {usage:?}"
        );
    }
    let (mut x, mut q_ref, mut k_ref, mut v_ref) =
        (qkv.values(), q_out.values(), k.values(), v.values());
    reference::qkv_cache(
        &spec,
        &qkv_layout,
        &mut x,
        kv_heads,
        HostPositions::Ids(&positions),
        Some((&q_layout, &mut q_ref)),
        (&cache_layout, &mut k_ref),
        (&cache_layout, &mut v_ref),
        HostCacheIndex::Position,
        None,
    );
    q_out
        .check(&q_ref, "repeated: q_out")
        .unwrap_or_else(|e| panic!("{e}"));
    k.check(&k_ref, "repeated: K cache")
        .unwrap_or_else(|e| panic!("{e}"));
    v.check(&v_ref, "repeated: V cache")
        .unwrap_or_else(|e| panic!("{e}"));
}
