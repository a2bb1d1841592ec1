//! The RoPE variants of the inference engines against the reference: fused Q+K with GQA,
//! packed QKV, token-major and varlen layouts, per-row starts, out of place, cos/sin caches,
//! bf16, M-RoPE; and the cross-checks that pin conventions (sharding, pair-layout
//! permutation, cache vs on-the-fly).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{
    Rng, assert_matches, assert_one_rounding, bits, ctx, f32_buffer, guarded_input, guarded_u16,
    read_back, run_on_buffers, run_on_u16, u32_buffer, widen,
};
use wgpu_posenc::Dims;
use wgpu_posenc::{
    ArrayView, CosSinCache, Error, HostPositions, Layout, MRopeOrder, OutputOrder, PairLayout,
    Positions, RopeCall, RopeSpec, Scaling, SinusoidalLayout, SinusoidalSpec, TensorView,
    reference,
};

const TOL: f64 = 1e-6;
const LAYOUTS: [PairLayout; 2] = [PairLayout::Interleaved, PairLayout::HalfSplit];

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

/// A cos/sin cache filled by the sinusoidal kernel: concatenated rows of width r are exactly
/// vLLM's layout with sin first, so cos is at r/2 and sin at 0.
struct TableCache {
    r: u64,
    max_pos: u64,
    table: Vec<f32>,
    buffer: wgpu::Buffer,
}

impl TableCache {
    fn new(r: u64, max_pos: u64) -> Self {
        let spec = SinusoidalSpec::new(r).layout(SinusoidalLayout::Concatenated);
        let table = ctx()
            .sinusoidal_table_host(&spec, max_pos, 0)
            .expect("table");
        let buffer = f32_buffer(&table);
        Self {
            r,
            max_pos,
            table,
            buffer,
        }
    }

    /// The cache as the kernels take it (no overflow flag).
    fn gpu(&self) -> CosSinCache<'_> {
        CosSinCache {
            cos: ArrayView::at(&self.buffer, self.r / 2 * 4),
            sin: ArrayView::new(&self.buffer),
            max_pos: self.max_pos,
            row_stride: self.r,
            overflow_flag: None,
        }
    }

    /// The reference's RoPE of `x` with the angles from this cache.
    fn expected(
        &self,
        spec: &RopeSpec,
        layout: &Layout,
        x: &[f32],
        positions: HostPositions<'_>,
    ) -> Vec<f64> {
        let cache = reference::HostCache {
            values: &self.table,
            max_pos: self.max_pos,
            row_stride: self.r,
            cos_offset: self.r / 2,
            sin_offset: 0,
        };
        let mut expected = widen(x);
        reference::rope_out(
            spec,
            layout,
            &widen(x),
            layout,
            &mut expected,
            positions,
            Some(&cache),
        );
        expected
    }
}

#[test]
fn cache_path_matches_on_the_fly_bit_for_bit() {
    let mut rng = Rng::new(45);
    let table = TableCache::new(64, 300);
    let cache = table.gpu();
    for pair_layout in LAYOUTS {
        let spec = RopeSpec::new().pair_layout(pair_layout);
        let layout = Layout::bshd(Dims {
            batch: 2,
            heads: 4,
            seq: 50,
            head_dim: 64,
        });
        let x = guarded_input(&mut rng, &layout, 3);
        let out = run_on_buffers(&[&x, &x], |encoder, b| {
            let cached = RopeCall::new(TensorView::new(&b[0], layout), Positions::Start(250))
                .with_cache(cache);
            ctx()
                .encode_rope_call(encoder, &spec, &cached)
                .expect("cached");
            ctx()
                .encode_rope(
                    encoder,
                    &spec,
                    &TensorView::new(&b[1], layout),
                    Positions::Start(250),
                )
                .expect("fly");
        });
        assert_eq!(
            bits(&out[0]),
            bits(&out[1]),
            "{pair_layout:?}: cache and on-the-fly differ"
        );
        let expected = table.expected(&spec, &layout, &x, HostPositions::Start(250));
        assert_matches(&x, &out[0], &expected, TOL, "cache vs reference");
    }
}

#[test]
fn cache_positions_out_of_range() {
    let table = TableCache::new(32, 64);
    let max_pos = table.max_pos;
    let spec = RopeSpec::new();
    let layout = Layout::bhsd([1, 2, 8, 32]);
    let mut rng = Rng::new(46);
    let x = guarded_input(&mut rng, &layout, 3);
    let cache = table.gpu();
    // Known on the host: refused before anything is recorded.
    let buffer = f32_buffer(&x);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let call =
        RopeCall::new(TensorView::new(&buffer, layout), Positions::Start(57)).with_cache(cache);
    let e = ctx()
        .encode_rope_call(&mut encoder, &spec, &call)
        .expect_err("past the cache");
    assert!(
        matches!(
            e,
            Error::PositionOutOfCache {
                position: 64,
                max_pos: 64
            }
        ),
        "{e}"
    );
    // On the GPU without a flag: refused.
    let ids: Vec<u32> = vec![1, 2, 3, 70, 5, 6, 1000, 8];
    let ids_buffer = u32_buffer(&ids);
    let call = RopeCall::new(
        TensorView::new(&buffer, layout),
        Positions::Ids(ArrayView::new(&ids_buffer)),
    )
    .with_cache(cache);
    let e = ctx()
        .encode_rope_call(&mut encoder, &spec, &call)
        .expect_err("no flag");
    assert!(matches!(e, Error::PositionsMismatch(_)), "{e}");
    // On the GPU with a flag: clamped to the last row and flagged; in range, flag stays 0.
    for (ids, flagged) in [(ids.clone(), 1u32), (vec![0, 1, 2, 3, 63, 62, 61, 60], 0)] {
        let ids_buffer = u32_buffer(&ids);
        let flag = common::f32_buffer(&[f32::from_bits(0); 4]);
        let out = run_on_buffers(&[&x], |encoder, b| {
            let call = RopeCall::new(
                TensorView::new(&b[0], layout),
                Positions::Ids(ArrayView::new(&ids_buffer)),
            )
            .with_cache(cache.with_overflow_flag(ArrayView::at(&flag, 4)));
            ctx()
                .encode_rope_call(encoder, &spec, &call)
                .expect("clamped");
        });
        let flag = read_back(
            &flag,
            ctx().device().create_command_encoder(&Default::default()),
        );
        assert_eq!(bits(&flag), vec![0, flagged, 0, 0]);
        let clamped: Vec<u32> = ids.iter().map(|&p| p.min(max_pos as u32 - 1)).collect();
        let expected = table.expected(&spec, &layout, &x, HostPositions::Ids(&clamped));
        assert_matches(&x, &out[0], &expected, TOL, "clamped");
    }
}

#[test]
fn bf16_within_one_rounding() {
    use half::bf16;
    // bf16: 7 stored mantissa bits, smallest normal exponent -126.
    const BF16: (i32, i32) = (7, -126);
    let value = |b: u16| f64::from(bf16::from_bits(b).to_f32());
    let mut rng = Rng::new(47);
    for (pair_layout, layout) in [
        (
            PairLayout::HalfSplit,
            Layout::bhsd([2, 3, 19, 64]).with_offset(4),
        ),
        (
            PairLayout::Interleaved,
            Layout::bshd(Dims {
                batch: 1,
                heads: 4,
                seq: 9,
                head_dim: 16,
            })
            .with_offset(3),
        ),
        (
            PairLayout::HalfSplit,
            Layout::bhsd([1, 2, 5, 6]).with_offset(1),
        ),
        (
            PairLayout::Interleaved,
            Layout::bhsd([1, 2, 7, 10]).with_offset(2),
        ),
    ] {
        let input = guarded_u16(&mut rng, &layout, 5, |v| bf16::from_f32(v).to_bits());
        let spec = RopeSpec::new().pair_layout(pair_layout);
        let gpu = run_on_u16(&input, |encoder, buffer| {
            let view = TensorView::new(buffer, layout).with_dtype(wgpu_posenc::Dtype::BF16);
            ctx()
                .encode_rope(encoder, &spec, &view, Positions::Start(999))
                .map(drop)
        })
        .expect("bf16 runs on every adapter");
        let mut expected: Vec<f64> = input.iter().map(|&v| value(v)).collect();
        reference::rope(&spec, &layout, &mut expected, HostPositions::Start(999));
        assert_one_rounding(&input, &gpu, value, &expected, BF16, &format!("{layout:?}"));
    }
}

#[test]
fn mrope_contiguous_and_interleaved_sections() {
    let mut rng = Rng::new(48);
    // Qwen2-VL: head_dim 128, mrope_section [16, 24, 24]; Qwen3-VL interleaved [24, 20, 20];
    // ERNIE 4.5 VL: h, w alternating over 44 pairs, then 20 t pairs.
    for (section, order) in [
        ([16, 24, 24], MRopeOrder::Chunks),
        ([24, 20, 20], MRopeOrder::Interleaved),
        ([20, 22, 22], MRopeOrder::HwThenT),
    ] {
        for pair_layout in LAYOUTS {
            let spec = RopeSpec::new()
                .pair_layout(pair_layout)
                .base(1_000_000.0)
                .mrope_order(section, order);
            let layout = Layout::bshd(Dims {
                batch: 2,
                heads: 3,
                seq: 20,
                head_dim: 128,
            });
            let ids: Vec<u32> = (0..3 * 2 * 20)
                .map(|i| (rng.next_u64() % 5000) as u32 + i % 7)
                .collect();
            let x = guarded_input(&mut rng, &layout, 3);
            let mut gpu = x.clone();
            ctx()
                .rope_host(&spec, layout, &mut gpu, HostPositions::Axes(&ids))
                .expect("mrope");
            let mut expected = widen(&x);
            reference::rope(&spec, &layout, &mut expected, HostPositions::Axes(&ids));
            assert_matches(
                &x,
                &gpu,
                &expected,
                TOL,
                &format!("mrope {section:?} {order:?}"),
            );
        }
    }
    // ERNIE's h and w halves are stacked pair by pair: unequal ones are refused, as HF's
    // torch.stack refuses them.
    let bad = RopeSpec::new().mrope_order([20, 23, 21], MRopeOrder::HwThenT);
    let layout = Layout::bshd(Dims {
        batch: 1,
        heads: 1,
        seq: 2,
        head_dim: 128,
    });
    let mut x = guarded_input(&mut rng, &layout, 3);
    assert!(matches!(
        ctx().rope_host(&bad, layout, &mut x, HostPositions::Axes(&[1; 6])),
        Err(Error::InvalidMRopeSection { .. })
    ));
    // Text tokens have the same position on every axis: plain RoPE, bit for bit.
    let layout = Layout::bshd(Dims {
        batch: 1,
        heads: 2,
        seq: 10,
        head_dim: 128,
    });
    let x = guarded_input(&mut rng, &layout, 3);
    let pos: Vec<u32> = (0..10).map(|i| 40 + i).collect();
    let axes: Vec<u32> = pos.iter().cycle().take(30).copied().collect();
    let (mut a, mut b) = (x.clone(), x.clone());
    let spec = RopeSpec::new().base(1_000_000.0);
    ctx()
        .rope_host(
            &spec.clone().mrope([16, 24, 24], false),
            layout,
            &mut a,
            HostPositions::Axes(&axes),
        )
        .expect("axes");
    ctx()
        .rope_host(&spec, layout, &mut b, HostPositions::Ids(&pos))
        .expect("ids");
    assert_eq!(bits(&a), bits(&b));
    // Sections that do not cover the pairs are refused.
    let e = ctx()
        .rope_host(
            &RopeSpec::new().mrope([16, 24, 20], false),
            layout,
            &mut a,
            HostPositions::Axes(&axes),
        )
        .expect_err("sections");
    assert!(
        matches!(e, Error::InvalidMRopeSection { pairs: 64, .. }),
        "{e}"
    );
    let e = ctx()
        .rope_host(&RopeSpec::new(), layout, &mut a, HostPositions::Axes(&axes))
        .expect_err("no sections");
    assert!(matches!(e, Error::PositionsMismatch(_)), "{e}");
}

#[test]
fn shards_give_the_unsharded_result_bit_for_bit() {
    let mut rng = Rng::new(49);
    let shape = [1u64, 8, 96, 64];
    let layout = Layout::bhsd(shape);
    let x = rng.values(8 * 96 * 64);
    let spec = RopeSpec::new()
        .pair_layout(PairLayout::HalfSplit)
        .base(500_000.0);
    let mut whole = x.clone();
    ctx()
        .rope_host(&spec, layout, &mut whole, HostPositions::Start(1000))
        .expect("whole");
    // Sequence parallel: three shards of 32 tokens, each its own context and buffer, with
    // its global start offset; then the same with explicit ids.
    for use_ids in [false, true] {
        let mut joined = vec![0.0f32; x.len()];
        for shard in 0..3u64 {
            let own = wgpu_posenc::PosEnc::with_default_adapter().expect("context");
            let shard_layout = Layout::bhsd([1, 8, 32, 64]);
            let mut part: Vec<f32> = (0..8)
                .flat_map(|h| {
                    let at = ((h * 96 + shard * 32) * 64) as usize;
                    x[at..at + 32 * 64].to_vec()
                })
                .collect();
            let ids: Vec<u32> = (0..32).map(|s| 1000 + (shard * 32 + s) as u32).collect();
            let positions = if use_ids {
                HostPositions::Ids(&ids)
            } else {
                HostPositions::Start(1000 + 32 * shard as u32)
            };
            own.rope_host(&spec, shard_layout, &mut part, positions)
                .expect("shard");
            for h in 0..8u64 {
                let at = ((h * 96 + shard * 32) * 64) as usize;
                joined[at..at + 32 * 64]
                    .copy_from_slice(&part[(h * 32 * 64) as usize..((h + 1) * 32 * 64) as usize]);
            }
        }
        assert_eq!(
            bits(&joined),
            bits(&whole),
            "sequence shards (ids: {use_ids})"
        );
    }
    // Tensor parallel: heads 2..5 through a strided view of the whole buffer.
    let sub = Layout::strided([1, 3, 96, 64], layout.strides).with_offset(2 * 96 * 64);
    let mut part = x.clone();
    ctx()
        .rope_host(&spec, sub, &mut part, HostPositions::Start(1000))
        .expect("heads");
    let head = |v: &[f32], h: usize| bits(&v[h * 96 * 64..(h + 1) * 96 * 64]);
    for h in 0..8 {
        if (2..5).contains(&h) {
            assert_eq!(head(&part, h), head(&whole, h), "head {h}");
        } else {
            assert_eq!(head(&part, h), head(&x, h), "head {h} must be untouched");
        }
    }
}

#[test]
fn interleaved_and_half_split_agree_after_the_permutation() {
    // Interleaved pair j is (2j, 2j+1); half-split pair j is (j, j + r/2). Permuting the head
    // dimension accordingly turns one convention into the other, bit for bit.
    let mut rng = Rng::new(50);
    let (d, r) = (64usize, 48usize);
    let layout = Layout::bshd(Dims {
        batch: 2,
        heads: 3,
        seq: 17,
        head_dim: d as u64,
    });
    let x = rng.values(2 * 3 * 17 * d);
    let perm = |v: &[f32]| -> Vec<f32> {
        v.chunks(d)
            .flat_map(|row| {
                let mut out = row.to_vec();
                for j in 0..r / 2 {
                    out[j] = row[2 * j];
                    out[j + r / 2] = row[2 * j + 1];
                }
                out
            })
            .collect()
    };
    let spec = RopeSpec::new().rotary_dim(r as u64);
    let mut a = x.clone();
    ctx()
        .rope_host(
            &spec.clone().pair_layout(PairLayout::Interleaved),
            layout,
            &mut a,
            HostPositions::Start(77),
        )
        .expect("i");
    let mut b = perm(&x);
    ctx()
        .rope_host(
            &spec.pair_layout(PairLayout::HalfSplit),
            layout,
            &mut b,
            HostPositions::Start(77),
        )
        .expect("h");
    assert_eq!(bits(&perm(&a)), bits(&b));
}

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

#[test]
fn a_prepared_rope_gives_the_one_shot_results_bit_for_bit() {
    let mut rng = Rng::new(53);
    for scaling in [
        Scaling::llama3(),
        Scaling::DynamicNtk {
            factor: 2.0,
            original_max_position_embeddings: 40,
        },
    ] {
        let spec = RopeSpec::new().base(500_000.0).scaling(scaling);
        let rope = ctx().rope(&spec, 64).expect("prepared");
        let layout = Layout::bshd(Dims {
            batch: 1,
            heads: 4,
            seq: 3,
            head_dim: 64,
        });
        // A decode loop: the same spec at growing positions, through both forms.
        for step in [0u32, 38, 39, 40, 41, 100, 38] {
            let x = guarded_input(&mut rng, &layout, 3);
            let out = run_on_buffers(&[&x, &x], |encoder, b| {
                rope.encode(
                    encoder,
                    &TensorView::new(&b[0], layout),
                    Positions::Start(step),
                )
                .expect("prepared");
                ctx()
                    .encode_rope(
                        encoder,
                        &spec,
                        &TensorView::new(&b[1], layout),
                        Positions::Start(step),
                    )
                    .expect("one shot");
            });
            assert_eq!(bits(&out[0]), bits(&out[1]), "step {step}");
            let mut expected = widen(&x);
            reference::rope(&spec, &layout, &mut expected, HostPositions::Start(step));
            assert_matches(&x, &out[0], &expected, TOL, "prepared");
        }
    }
    // A tensor of another head dim is an error.
    let rope = ctx().rope(&RopeSpec::new(), 64).expect("prepared");
    let b = f32_buffer(&[0.0; 256]);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let e = rope
        .encode(
            &mut encoder,
            &TensorView::new(&b, Layout::bhsd([1, 1, 2, 128])),
            Positions::Start(0),
        )
        .expect_err("head_dim 128 for a 64 spec");
    assert!(
        matches!(
            e,
            Error::DimMismatch {
                spec: 64,
                tensor: 128
            }
        ),
        "{e}"
    );
}
