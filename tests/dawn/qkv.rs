//! The recorded fused QKV calls, f32 and bf16, with QK-norm summed by subgroups and by a
//! barrier.

use super::common::{Rng, guarded_input, poison, widen};
use super::{Recorder, to_bf16, widen_bf16};

use wgpu_posenc::Dims;
use wgpu_posenc::{
    ArrayView, CacheIndex, Dtype, HostPositions, KvCache, Layout, NormWeight, OutputOrder,
    PairLayout, QkNorm, QkvCall, RopeSpec, TensorView, reference,
};

/// The fused QKV call: f32 with ids, GQA and a BHSD cache, Q in place; bf16 with varlen
/// positions, a paged bf16 cache (a skipped slot) and Q into its own tensor.
pub(super) fn fused(rec: &mut Recorder, rng: &mut Rng) {
    let ids: Vec<u32> = (0..10).map(|i| (i * 37 + 5) % 300).collect();
    let cu = [0u32, 3, 7];
    let slots: [i32; 7] = [0, 1, 2, -1, 5, 6, 7];
    // QK-norm on both calls: Gemma's on the bf16 one, summed by subgroup shuffles where the
    // recording adapter has them (its token's invocations fit SwiftShader's subgroup of 4
    // too); Qwen3's on the f32 one, summed through workgroup memory with a barrier.
    let norm = |d: usize, weight| QkNorm {
        q_weight: (0..d).map(|i| (i as f32 * 0.37).sin() * 0.5).collect(),
        k_weight: (0..d).map(|i| (i as f32 * 0.71).cos() * 0.5).collect(),
        eps: 1e-6,
        weight,
    };
    for bf in [false, true] {
        let [batch, seq, q_heads, kv_heads, d] = if bf {
            [1, 7, 2, 1, 16]
        } else {
            [2, 5, 4, 2, 32]
        };
        let norm = if bf {
            norm(16, NormWeight::OnePlus)
        } else {
            norm(32, NormWeight::Scale)
        };
        let heads = q_heads + 2 * kv_heads;
        let qkv_layout = Layout::bshd(Dims {
            batch,
            heads,
            seq,
            head_dim: d,
        })
        .with_offset(4);
        let q_layout = Layout::bhsd([batch, q_heads, seq, d]).with_offset(2);
        let cache_layout = |offset| {
            if bf {
                Layout::bshd(Dims {
                    batch: 1,
                    heads: kv_heads,
                    seq: 12,
                    head_dim: d,
                })
                .with_offset(offset)
            } else {
                Layout::bhsd([batch, kv_heads, 300, d]).with_offset(offset)
            }
        };
        let (k_layout, v_layout) = (cache_layout(6), cache_layout(10));
        let len = |l: &Layout| (l.end().expect("layout") + 4) as usize;
        let poisoned = |n: usize| -> Vec<f32> { (0..n).map(poison).collect() };
        let qkv_in = guarded_input(rng, &qkv_layout, 4);
        let (q_in, k_in, v_in) = (
            poisoned(len(&q_layout)),
            poisoned(len(&k_layout)),
            poisoned(len(&v_layout)),
        );
        let host = if bf {
            HostPositions::varlen(&cu, None)
        } else {
            HostPositions::Ids(&ids)
        };
        // The bf16 call writes Q out and K in DeepSeek-V3's HF order (PAIR_HALVES).
        let spec = if bf {
            RopeSpec::new()
                .pair_layout(PairLayout::Interleaved)
                .output_order(OutputOrder::PairHalves)
        } else {
            RopeSpec::new().pair_layout(PairLayout::HalfSplit)
        };
        let widen_as = |x: &[f32]| {
            if bf {
                widen_bf16(&to_bf16(x))
            } else {
                widen(x)
            }
        };
        let (mut qkv_e, mut q_e, mut k_e, mut v_e) = (
            widen_as(&qkv_in),
            widen_as(&q_in),
            widen_as(&k_in),
            widen_as(&v_in),
        );
        reference::qkv_cache(
            &spec,
            &qkv_layout,
            &mut qkv_e,
            kv_heads,
            host,
            bf.then_some((&q_layout, &mut q_e[..])),
            (&k_layout, &mut k_e),
            (&v_layout, &mut v_e),
            if bf {
                reference::HostCacheIndex::Slots(&slots)
            } else {
                reference::HostCacheIndex::Position
            },
            Some(&norm),
        );
        let upload = |rec: &Recorder, x: &[f32]| if bf { rec.u16(&to_bf16(x)) } else { rec.f32(x) };
        let (qkv, q, k, v) = (
            upload(rec, &qkv_in),
            upload(rec, &q_in),
            upload(rec, &k_in),
            upload(rec, &v_in),
        );
        let gpu = host.map(|a| rec.u32(a));
        let slot_words: Vec<u32> = slots.iter().map(|&x| x as u32).collect();
        let slot_buffer = rec.u32(&slot_words);
        let check = |rec: &Recorder, b: &wgpu::Buffer, x: &[f32], e: Vec<f64>| {
            if bf {
                rec.check_bf16(b, &to_bf16(x), e)
            } else {
                rec.check_f32(b, x, e)
            }
        };
        let mut checks = vec![
            check(rec, &qkv, &qkv_in, qkv_e),
            check(rec, &k, &k_in, k_e),
            check(rec, &v, &v_in, v_e),
        ];
        if bf {
            checks.push(check(rec, &q, &q_in, q_e));
        }
        let dtype = if bf { Dtype::BF16 } else { Dtype::F32 };
        let name = if bf {
            "fused QKV, bf16, varlen, paged bf16 cache, Q out and K in pair halves, QK-norm \
             by subgroups"
        } else {
            "fused QKV, f32, ids, GQA, BHSD cache, Q in place, QK-norm by a barrier"
        };
        rec.call(
            name,
            |ctx, encoder| {
                let view = |b, l| TensorView::new(b, l).with_dtype(dtype);
                let cache = KvCache {
                    k: view(&k, k_layout),
                    v: view(&v, v_layout),
                    index: if bf {
                        CacheIndex::Slots(ArrayView::new(&slot_buffer))
                    } else {
                        CacheIndex::Position
                    },
                    overflow_flag: None,
                };
                let call = QkvCall::new(
                    view(&qkv, qkv_layout),
                    kv_heads,
                    gpu.as_ref().map(ArrayView::new),
                    cache,
                );
                let call = call.with_qk_norm(&norm);
                if bf {
                    ctx.encode_qkv(encoder, &spec, &call.with_q_out(view(&q, q_layout)))
                } else {
                    let barrier = ctx.clone().with_subgroups(false);
                    barrier.encode_qkv(encoder, &spec, &call)
                }
                .map(drop)
            },
            checks,
        );
    }
}
