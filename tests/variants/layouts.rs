//! RoPE over the engines' layouts and position forms: fused Q+K with GQA, packed QKV, varlen
//! sequences and per-row starts (also across token blocks), out of place, K alone.

use super::common::{
    self, Rng, assert_matches, bits, ctx, guarded_input, run_on_buffers, u32_buffer, widen,
};
use super::{LAYOUTS, TOL};
use wgpu_posenc::Dims;
use wgpu_posenc::{
    ArrayView, HostPositions, Layout, OutputOrder, PairLayout, Positions, RopeCall, RopeSpec,
    Scaling, SinusoidalSpec, TensorView, reference,
};

#[test]
fn fused_qk_with_grouped_query_attention() {
    let mut rng = Rng::new(41);
    for pair_layout in LAYOUTS {
        // BSHD Q [2, 8, 33, 64] and K [2, 2, 33, 64]; and BHSD, which splits into two passes
        // once a token's heads do not fit a binding.
        for (q_layout, k_layout, cap) in [
            (
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 8,
                    seq: 33,
                    head_dim: 64,
                }),
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 2,
                    seq: 33,
                    head_dim: 64,
                })
                .with_offset(4),
                None,
            ),
            (
                Layout::bhsd([1, 6, 40, 32]),
                Layout::bhsd([1, 3, 40, 32]),
                Some(6000),
            ),
        ] {
            let ctx = match cap {
                Some(bytes) => ctx().clone().with_max_binding_size(bytes),
                None => ctx().clone(),
            };
            let spec = RopeSpec::new()
                .pair_layout(pair_layout)
                .scaling(Scaling::llama3())
                .base(500_000.0);
            let q = guarded_input(&mut rng, &q_layout, 7);
            let k = guarded_input(&mut rng, &k_layout, 9);
            let mut report = None;
            let out = run_on_buffers(&[&q, &k], |encoder, b| {
                let (qv, kv) = (
                    TensorView::new(&b[0], q_layout),
                    TensorView::new(&b[1], k_layout),
                );
                report = Some(
                    ctx.encode_rope_qk(encoder, &spec, &qv, &kv, Positions::Start(70))
                        .expect("qk"),
                );
            });
            let (mut eq, mut ek) = (widen(&q), widen(&k));
            reference::rope(&spec, &q_layout, &mut eq, HostPositions::Start(70));
            reference::rope(&spec, &k_layout, &mut ek, HostPositions::Start(70));
            assert_matches(&q, &out[0], &eq, TOL, "Q");
            assert_matches(&k, &out[1], &ek, TOL, "K");
            let report = report.expect("report");
            if cap.is_none() {
                assert_eq!(report.dispatches, 1, "Q and K in one dispatch");
            } else {
                assert!(report.blocks >= 2, "{report:?}");
            }
        }
    }
}

#[test]
fn packed_qkv_leaves_v_untouched() {
    // [tokens, (Hq + 2 Hkv) * D] with Hq = 4, Hkv = 2, D = 16: Q and K are heads 0..6 of a
    // token-major view; V (heads 6..8) must not change by a single bit.
    let (t, hq, hkv, d) = (37u64, 4u64, 2u64, 16u64);
    let width = (hq + 2 * hkv) * d;
    let mut rng = Rng::new(42);
    let data = rng.values((t * width) as usize);
    let qk = Layout::strided([1, hq + hkv, t, d], [0, d, width]);
    for pair_layout in LAYOUTS {
        let spec = RopeSpec::new().pair_layout(pair_layout);
        let ids: Vec<u32> = (0..t as u32).map(|i| 5 * i + 3).collect();
        let ids_buffer = u32_buffer(&ids);
        let out = run_on_buffers(&[&data], |encoder, b| {
            let view = TensorView::new(&b[0], qk);
            ctx()
                .encode_rope(
                    encoder,
                    &spec,
                    &view,
                    Positions::Ids(ArrayView::new(&ids_buffer)),
                )
                .expect("qkv");
        });
        let mut expected = widen(&data);
        reference::rope(&spec, &qk, &mut expected, HostPositions::Ids(&ids));
        assert_matches(&data, &out[0], &expected, TOL, "packed qkv");
        for tok in 0..t {
            let v = (tok * width + (hq + hkv) * d) as usize..((tok + 1) * width) as usize;
            assert_eq!(bits(&out[0][v.clone()]), bits(&data[v]), "V of token {tok}");
        }
    }
}

#[test]
fn varlen_sequences_and_per_row_starts() {
    let mut rng = Rng::new(43);
    // Four packed sequences of 5, 1, 17 and 9 tokens, [T, H, D] token-major.
    let cu = [0u32, 5, 6, 23, 32];
    let offsets = [0u32, 100, 7, u32::MAX - 20];
    let layout = Layout::bshd(Dims {
        batch: 1,
        heads: 3,
        seq: 32,
        head_dim: 24,
    });
    for pair_layout in LAYOUTS {
        let spec = RopeSpec::new().pair_layout(pair_layout);
        for with_offsets in [false, true] {
            let x = guarded_input(&mut rng, &layout, 5);
            let mut gpu = x.clone();
            let positions = HostPositions::varlen(&cu, with_offsets.then_some(&offsets[..]));
            ctx()
                .rope_host(&spec, layout, &mut gpu, positions)
                .expect("varlen");
            let mut expected = widen(&x);
            reference::rope(&spec, &layout, &mut expected, positions);
            assert_matches(&x, &gpu, &expected, TOL, "varlen");
        }
        // Three sequences decoding at different lengths: one start per batch row.
        let layout = Layout::bhsd([3, 4, 2, 32]);
        let starts = [0u32, 4095, 1 << 30];
        let x = guarded_input(&mut rng, &layout, 5);
        let mut gpu = x.clone();
        ctx()
            .rope_host(&spec, layout, &mut gpu, HostPositions::BatchStarts(&starts))
            .expect("starts");
        let mut expected = widen(&x);
        reference::rope(
            &spec,
            &layout,
            &mut expected,
            HostPositions::BatchStarts(&starts),
        );
        assert_matches(&x, &gpu, &expected, TOL, "batch starts");
    }
}

#[test]
fn out_of_place_converts_layouts_and_copies_the_tail() {
    let mut rng = Rng::new(44);
    let orders = [
        (PairLayout::Interleaved, OutputOrder::Pairs),
        (PairLayout::HalfSplit, OutputOrder::Pairs),
        // DeepSeek-V3's HF order: r 48 and 32 run four pairs a lane, 6 one.
        (PairLayout::Interleaved, OutputOrder::PairHalves),
    ];
    for (pair_layout, order) in orders {
        for (r, offset) in [(48u64, 0u64), (32, 4), (6, 3)] {
            let shape = [2, 3, 21, 64];
            let src_layout = Layout::bshd(Dims::from_logical(shape)).with_offset(offset);
            let dst_layout = Layout::bhsd(shape).with_offset(8);
            let src = guarded_input(&mut rng, &src_layout, 5);
            let dst: Vec<f32> = (0..dst_layout.end().unwrap() as usize + 6)
                .map(common::poison)
                .collect();
            let spec = RopeSpec::new()
                .pair_layout(pair_layout)
                .rotary_dim(r)
                .output_order(order);
            let out = run_on_buffers(&[&src, &dst], |encoder, b| {
                let call = RopeCall::new(TensorView::new(&b[0], src_layout), Positions::Start(11))
                    .with_output(TensorView::new(&b[1], dst_layout));
                ctx()
                    .encode_rope_call(encoder, &spec, &call)
                    .expect("out of place");
            });
            // The source is untouched.
            assert_eq!(bits(&out[0]), bits(&src));
            let mut expected = widen(&dst);
            reference::rope_out(
                &spec,
                &src_layout,
                &widen(&src),
                &dst_layout,
                &mut expected,
                HostPositions::Start(11),
                None,
            );
            // Every element of the destination view was written (no poison left in it).
            for b in 0..2 {
                for h in 0..3 {
                    for s in 0..21 {
                        let row = reference::row_start(&dst_layout, b, h, s) as usize;
                        assert!(
                            out[1][row..row + 64].iter().all(|v| !v.is_nan()),
                            "row {b} {h} {s} unwritten"
                        );
                    }
                }
            }
            assert_matches(
                &dst,
                &out[1],
                &expected,
                TOL,
                &format!("out of place r {r} {pair_layout:?} {order:?}"),
            );
        }
    }
}

#[test]
fn k_is_rotated_when_q_has_no_heads() {
    let mut rng = Rng::new(51);
    let spec = RopeSpec::new();
    let q_layout = Layout::bshd(Dims {
        batch: 1,
        heads: 0,
        seq: 9,
        head_dim: 32,
    });
    let k_layout = Layout::bshd(Dims {
        batch: 1,
        heads: 2,
        seq: 9,
        head_dim: 32,
    });
    let k = guarded_input(&mut rng, &k_layout, 5);
    let q = vec![1.0f32; 4];
    let out = run_on_buffers(&[&q, &k], |encoder, b| {
        ctx()
            .encode_rope_qk(
                encoder,
                &spec,
                &TensorView::new(&b[0], q_layout),
                &TensorView::new(&b[1], k_layout),
                Positions::Start(11),
            )
            .expect("qk");
    });
    let mut expected = widen(&k);
    reference::rope(&spec, &k_layout, &mut expected, HostPositions::Start(11));
    assert_matches(&k, &out[1], &expected, TOL, "K");
    assert_eq!(bits(&out[0]), bits(&q), "empty Q untouched");
}

#[test]
fn per_row_starts_continue_across_token_blocks() {
    // [2, 4, 300, 32] BSHD with a 16 KiB binding: blocks of a few tokens each; every block
    // after the first must continue from the row's start (RoPE and the sinusoidal add).
    let mut rng = Rng::new(52);
    let capped = ctx().clone().with_max_binding_size(16 << 10);
    let starts = [7u32, 100_000];
    let starts_buf = u32_buffer(&starts);
    let layout = Layout::bshd(Dims {
        batch: 2,
        heads: 4,
        seq: 300,
        head_dim: 32,
    });
    let x = guarded_input(&mut rng, &layout, 9);
    let spec = RopeSpec::new();
    let mut report = None;
    let out = run_on_buffers(&[&x], |encoder, b| {
        report = Some(
            capped
                .encode_rope(
                    encoder,
                    &spec,
                    &TensorView::new(&b[0], layout),
                    Positions::BatchStarts(ArrayView::new(&starts_buf)),
                )
                .expect("rope"),
        );
    });
    assert!(report.expect("report").blocks > 2);
    let mut expected = widen(&x);
    reference::rope(
        &spec,
        &layout,
        &mut expected,
        HostPositions::BatchStarts(&starts),
    );
    assert_matches(&x, &out[0], &expected, TOL, "rope per-row starts");

    let sin = SinusoidalSpec::new(32);
    let emb = Layout::bsd(2, 300, 32);
    let x = guarded_input(&mut rng, &emb, 9);
    let out = run_on_buffers(&[&x], |encoder, b| {
        capped
            .encode_sinusoidal_add(
                encoder,
                &sin,
                &TensorView::new(&b[0], emb),
                Positions::BatchStarts(ArrayView::new(&starts_buf)),
                2.0,
            )
            .expect("add");
    });
    let mut expected = widen(&x);
    reference::sinusoidal_add(
        &sin,
        &emb,
        &mut expected,
        HostPositions::BatchStarts(&starts),
        2.0,
    );
    assert_matches(&x, &out[0], &expected, TOL, "sinusoidal per-row starts");
}
