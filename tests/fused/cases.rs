//! The table of fused calls (every position mode, cache layout, dtype and QK-norm form),
//! each run against the reference whole and again under a binding small enough to split it.

use super::common::ctx;
use super::{Case, GUARD, Index, Ran, has_f16, norm, run_on, uses_f16};
use wgpu_posenc::{
    Dtype, Error, NormWeight, OutputOrder, PairLayout, Positions, RopeSpec, Scaling,
};

fn cases() -> Vec<Case> {
    let ids = |v: &[u32]| Positions::Ids(v.to_vec());
    let halves = RopeSpec::new()
        .pair_layout(PairLayout::Interleaved)
        .output_order(OutputOrder::PairHalves);
    vec![
        // DeepSeek-V3's HF order: Q out and the K cache as first elements, then second ones;
        // V as it is.
        Case {
            spec: halves.clone(),
            q_out: true,
            index: Index::Slots(vec![3, 0, 7, 1, 2, 9]),
            ..Case::new(
                "PairHalves, Q out, paged, vec4",
                [2, 3, 4, 2, 64],
                ids(&[0, 1, 2, 4096, 4097, 1_000_000]),
            )
        },
        Case {
            spec: halves.clone().rotary_dim(6),
            q_out: true,
            offset: 3,
            cache_dtype: Dtype::BF16,
            cache_len: 40,
            ..Case::new(
                "PairHalves, rotary_dim 6 of 10, one pair an invocation, bf16 cache",
                [1, 24, 2, 1, 10],
                Positions::BatchStarts(vec![7]),
            )
        },
        Case {
            spec: halves.rotary_dim(32),
            q_out: true,
            norm: Some(norm(64, NormWeight::Scale)),
            ..Case::new(
                "PairHalves with QK-norm, rotary_dim 32 of 64",
                [2, 4, 4, 2, 64],
                Positions::BatchStarts(vec![0, 12]),
            )
        },
        Case {
            spec: RopeSpec::new().base(1_000_000.0),
            q_out: true,
            norm: Some(norm(64, NormWeight::Scale)),
            index: Index::Slots(vec![0, 1, 2, 3, 4, 10, 11, 12, 13, 20]),
            ..Case::new(
                "QK-norm (Qwen3's w), ids, GQA 6/2, Q out, paged, vec4",
                [2, 5, 6, 2, 64],
                ids(&[0, 1, 2, 3, 4, 90, 91, 92, 93, 100_000]),
            )
        },
        Case {
            q_out: true,
            norm: Some(norm(24, NormWeight::OnePlus)),
            cache_dtype: Dtype::BF16,
            ..Case::new(
                // Three lane groups a token (vec4, one group per invocation).
                "QK-norm, head_dim 24, vec4, three lane groups a token",
                [2, 7, 3, 1, 24],
                Positions::BatchStarts(vec![4, 10]),
            )
        },
        Case {
            spec: RopeSpec::new()
                .rotary_dim(16)
                .pair_layout(PairLayout::Interleaved),
            dtype: Dtype::BF16,
            cache_dtype: Dtype::F32,
            q_out: true,
            offset: GUARD,
            norm: Some(norm(32, NormWeight::OnePlus)),
            ..Case::new(
                "QK-norm (Gemma's 1 + w), bf16, partial rotary, Q out, one pair per invocation",
                [1, 6, 2, 1, 32],
                Positions::Start(11),
            )
        },
        Case {
            norm: Some(norm(64, NormWeight::Scale)),
            ..Case::new(
                "QK-norm, Q in place, GQA 6/2, vec4",
                [2, 5, 6, 2, 64],
                Positions::Start(3),
            )
        },
        Case {
            spec: RopeSpec::new()
                .rotary_dim(12)
                .pair_layout(PairLayout::Interleaved),
            norm: Some(norm(256, NormWeight::OnePlus)),
            cache_dtype: Dtype::BF16,
            offset: 3,
            ..Case::new(
                "QK-norm, Q in place, head_dim 256, one pair per invocation, partial rotary",
                [1, 4, 2, 1, 256],
                Positions::Ids(vec![5, 0, 7, 2]),
            )
        },
        Case {
            norm: Some(norm(256, NormWeight::Scale)),
            q_out: true,
            index: Index::Slots(vec![3, -1, 0]),
            ..Case::new(
                "QK-norm, head_dim 256, vec4, Q out, paged",
                [1, 3, 4, 2, 256],
                Positions::Start(100),
            )
        },
        Case::new(
            "start, GQA 8/2, BHSD cache, in place",
            [2, 5, 8, 2, 64],
            Positions::Start(7),
        ),
        Case {
            spec: RopeSpec::new().pair_layout(PairLayout::Interleaved),
            cache_dtype: Dtype::F16,
            index: Index::Position { bshd: true },
            q_out: true,
            offset: GUARD,
            ..Case::new(
                "per-row starts, interleaved, f16 BSHD cache, Q out, one pair per invocation",
                [3, 4, 4, 2, 32],
                Positions::BatchStarts(vec![0, 9, 3]),
            )
        },
        Case {
            spec: RopeSpec::new()
                .rotary_dim(32)
                .scaling(Scaling::yarn(4.0, 4096)),
            dtype: Dtype::BF16,
            cache_dtype: Dtype::BF16,
            index: Index::Slots(vec![3, 4, -1, 9, 0, 1, 17, -1, 12, 2, 5, 6]),
            cache_len: 20,
            ..Case::new(
                "ids, bf16 in and cache, partial rotary, YaRN, paged",
                [2, 6, 4, 1, 64],
                ids(&[0, 1, 2, 3, 4, 5, 100, 101, 70_000, 4_000_000_000, 7, 8]),
            )
        },
        Case {
            dtype: Dtype::F16,
            // Packed sequences restart their positions: distinct slots keep them apart.
            index: Index::Slots(vec![0, 1, 2, 8, 9, 10, 11, 16, 17, 18]),
            ..Case::new(
                "varlen, f16 in, f32 paged cache",
                [1, 10, 6, 3, 32],
                Positions::Varlen {
                    cu_seqlens: vec![0, 3, 7, 10],
                    num_seqs: 3,
                    offsets: None,
                },
            )
        },
        Case {
            spec: RopeSpec::new()
                .pair_layout(PairLayout::Interleaved)
                .inverse(true),
            cache_dtype: Dtype::BF16,
            index: Index::Position { bshd: true },
            q_out: true,
            ..Case::new(
                "varlen offsets, inverse, bf16 BSHD cache, Q out",
                [1, 9, 2, 2, 16],
                Positions::Varlen {
                    cu_seqlens: vec![0, 4, 5, 9],
                    num_seqs: 3,
                    offsets: Some(vec![5, 0, 12]),
                },
            )
        },
        Case {
            spec: RopeSpec::new().mrope([8, 12, 12], false),
            offset: GUARD,
            cache_len: 8,
            ..Case::new(
                "M-RoPE axes, cache at the temporal position",
                [2, 3, 4, 2, 64],
                Positions::Axes(vec![
                    0, 1, 2, 3, 4, 5, // temporal
                    0, 7, 8, 2, 2, 9, // height
                    1, 1, 4, 0, 6, 3, // width
                ]),
            )
        },
        Case {
            spec: RopeSpec::new()
                .pair_layout(PairLayout::Interleaved)
                .mrope([8, 12, 12], true),
            cache_dtype: Dtype::BF16,
            q_out: true,
            cache_len: 11,
            ..Case::new(
                "interleaved M-RoPE, bf16 cache, Q out, vec4",
                [2, 3, 4, 2, 64],
                Positions::Axes((0..18).map(|i| (i * 7) % 11).collect()),
            )
        },
        Case {
            spec: RopeSpec::new().base(500_000.0).scaling(Scaling::llama3()),
            ..Case::new(
                "MHA 4/4, Llama 3, head_dim 128, Q out",
                [1, 7, 4, 4, 128],
                Positions::Start(0),
            )
        },
    ]
}

#[test]
fn fused_calls_match_the_reference() {
    // QK-norm cases run twice: with the sums by subgroup shuffles wherever the device has
    // them and a token's invocations fit its smallest subgroup (head_dim 24, 32 and 64 on
    // lavapipe), and through workgroup memory.
    let barrier = ctx().clone().with_subgroups(false);
    for (i, case) in cases().into_iter().enumerate() {
        let contexts = match case.norm {
            Some(_) => vec![ctx(), &barrier],
            None => vec![ctx()],
        };
        for posenc in contexts {
            match run_on(posenc, &case, 100 + i as u64) {
                Ok(Ran { flag, .. }) => {
                    // Every position and slot of these cases is inside its cache.
                    assert_eq!(flag, 0, "{}: overflow flag", case.name);
                }
                Err(Error::MissingFeature { .. }) if uses_f16(&case) && !has_f16() => {}
                Err(e) => panic!("{}: {e}", case.name),
            }
        }
    }
}

#[test]
fn calls_larger_than_a_binding_are_split_and_match_the_reference() {
    // A binding of about three tokens of every head: one batch row and a few tokens per
    // dispatch, every position mode.
    for (i, case) in cases().into_iter().enumerate() {
        let [batch, seq, q, kv, d] = case.dims;
        let token = (q + 2 * kv) * d * case.dtype.size();
        // The caches are bound whole: the cap leaves room for them.
        let cache_batch = if matches!(case.index, Index::Slots(_)) {
            1
        } else {
            batch
        };
        let cache = (cache_batch * kv * case.cache_len * d + 4 * GUARD) * case.cache_dtype.size();
        let cap = (3 * token).max(cache) + 512;
        let capped = ctx().clone().with_max_binding_size(cap);
        match run_on(&capped, &case, 300 + i as u64) {
            Ok(Ran {
                flag, dispatches, ..
            }) => {
                assert_eq!(flag, 0, "{}: overflow flag", case.name);
                let whole = batch * seq * token + 512;
                assert!(
                    dispatches > 1 || whole <= cap,
                    "{}: {dispatches} dispatch(es)",
                    case.name
                );
                eprintln!("{}: {dispatches} dispatches", case.name);
            }
            Err(Error::MissingFeature { .. }) if uses_f16(&case) && !has_f16() => {}
            Err(e) => panic!("{}: {e}", case.name),
        }
    }
}
