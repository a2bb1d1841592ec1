//! The fused attention preprocessing call (`Rope::encode_qkv`): from a packed QKV projection,
//! Q rotated, K rotated and V copied into a KV cache in one dispatch, against the f64
//! reference (`reference::qkv_cache`): every position mode, GQA and MHA, contiguous caches in
//! BHSD and BSHD and paged caches by slot mapping (negative slots skipped, slots past the
//! cache flagged), each input dtype and each cache dtype, Q in place or into its own tensor.
//! Every buffer is poisoned around and between the views: an element written that should not
//! be, or one left unwritten, fails.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{Elements, Rng, ctx, u32_buffer};
use wgpu_posenc::reference::{self, HostCacheIndex};
use wgpu_posenc::{
    ArrayView, CacheIndex, Dims, Dtype, Error, HostPositions, KvCache, Layout, NormWeight,
    OutputOrder, PairLayout, Positions, QkNorm, QkvCall, RopeSpec, Scaling, TensorView,
};

/// Elements of guard before and after every view.
const GUARD: u64 = 6;

#[derive(Clone, Debug)]
enum Index {
    Position { bshd: bool },
    Slots(Vec<i32>),
}

#[derive(Clone, Debug)]
struct Case {
    name: &'static str,
    spec: RopeSpec,
    dims: [u64; 5],
    dtype: Dtype,
    cache_dtype: Dtype,
    positions: Positions<Vec<u32>>,
    index: Index,
    cache_len: u64,
    q_out: bool,
    /// Offsets of the input and Q out: a multiple of 4 (vec4 access where the head allows
    /// it) or not (one pair per invocation).
    offset: u64,
    /// Offsets of the K and V caches.
    cache_offsets: [u64; 2],
    norm: Option<QkNorm>,
}

impl Case {
    fn new(name: &'static str, dims: [u64; 5], positions: Positions<Vec<u32>>) -> Self {
        Case {
            name,
            spec: RopeSpec::new(),
            dims,
            dtype: Dtype::F32,
            cache_dtype: Dtype::F32,
            positions,
            index: Index::Position { bshd: false },
            cache_len: 24,
            q_out: false,
            offset: 8,
            cache_offsets: [GUARD, 2 * GUARD],
            norm: None,
        }
    }
}

/// Runs `case`; returns the flag's value, or the call's error.
fn run(case: &Case, seed: u64) -> Result<u32, Error> {
    run_on(ctx(), case, seed).map(|ran| ran.flag)
}

/// What a case's run returned.
struct Ran {
    /// The overflow flag's value.
    flag: u32,
    /// Dispatches recorded.
    dispatches: u32,
    /// Every output buffer's bytes (the input, Q out, the caches), guards included.
    bytes: Vec<u8>,
}

/// Runs `case` on `posenc` and checks it against the reference.
fn run_on(posenc: &wgpu_posenc::PosEnc, case: &Case, seed: u64) -> Result<Ran, Error> {
    let mut rng = Rng::new(seed);
    let [batch, seq, q_heads, kv_heads, d] = case.dims;
    let heads = q_heads + 2 * kv_heads;
    let qkv_layout = Layout::bshd(Dims {
        batch,
        heads,
        seq,
        head_dim: d,
    })
    .with_offset(case.offset);
    let q_layout = Layout::bhsd([batch, q_heads, seq, d]).with_offset(case.offset);
    let (cache_batch, bshd) = match &case.index {
        Index::Position { bshd } => (batch, *bshd),
        Index::Slots(_) => (1, true),
    };
    let cache_dims = Dims {
        batch: cache_batch,
        heads: kv_heads,
        seq: case.cache_len,
        head_dim: d,
    };
    let cache_layout = |offset| {
        let l = if bshd {
            Layout::bshd(cache_dims)
        } else {
            Layout::bhsd([cache_batch, kv_heads, case.cache_len, d])
        };
        l.with_offset(offset)
    };
    let (k_layout, v_layout) = (
        cache_layout(case.cache_offsets[0]),
        cache_layout(case.cache_offsets[1]),
    );
    let qkv = Elements::new(&mut rng, case.dtype, &[(qkv_layout, true)], GUARD).expect("layout");
    let q_out = case
        .q_out
        .then(|| Elements::new(&mut rng, case.dtype, &[(q_layout, false)], GUARD).expect("layout"));
    let k = Elements::new(&mut rng, case.cache_dtype, &[(k_layout, false)], GUARD).expect("layout");
    let v = Elements::new(&mut rng, case.cache_dtype, &[(v_layout, false)], GUARD).expect("layout");
    let pos_buffers = case.positions.as_ref().map(|p| u32_buffer(p));
    let slots: Vec<u32> = match &case.index {
        Index::Slots(s) => s.iter().map(|&x| x as u32).collect(),
        Index::Position { .. } => Vec::new(),
    };
    let slot_buffer = u32_buffer(&slots);
    let flag = u32_buffer(&[0]);

    fn view(data: &Elements, layout: Layout) -> TensorView<'_> {
        TensorView::new(&data.buffer, layout).with_dtype(data.dtype)
    }
    let call = QkvCall::new(
        view(&qkv, qkv_layout),
        kv_heads,
        pos_buffers.as_ref().map(ArrayView::new),
        KvCache {
            k: view(&k, k_layout),
            v: view(&v, v_layout),
            index: match &case.index {
                Index::Position { .. } => CacheIndex::Position,
                Index::Slots(_) => CacheIndex::Slots(ArrayView::new(&slot_buffer)),
            },
            overflow_flag: Some(ArrayView::new(&flag)),
        },
    );
    let call = match &q_out {
        Some(out) => call.with_q_out(view(out, q_layout)),
        None => call,
    };
    let call = match &case.norm {
        Some(norm) => call.with_qk_norm(norm),
        None => call,
    };
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let report = posenc.encode_qkv(&mut encoder, &case.spec, &call)?;
    ctx().queue().submit([encoder.finish()]);

    let host: HostPositions<'_> = case.positions.as_ref().map(|p| &p[..]);
    let (mut qkv_ref, mut k_ref, mut v_ref) = (qkv.values(), k.values(), v.values());
    let mut q_ref = q_out.as_ref().map(Elements::values);
    let slots_ref: Vec<i32> = slots.iter().map(|&s| s as i32).collect();
    reference::qkv_cache(
        &case.spec,
        &qkv_layout,
        &mut qkv_ref,
        kv_heads,
        host,
        q_ref.as_mut().map(|q| (&q_layout, &mut q[..])),
        (&k_layout, &mut k_ref),
        (&v_layout, &mut v_ref),
        match &case.index {
            Index::Position { .. } => HostCacheIndex::Position,
            Index::Slots(_) => HostCacheIndex::Slots(&slots_ref),
        },
        case.norm.as_ref(),
    );
    let check = |data: &Elements, want: &[f64], what: &str| {
        data.check(want, &format!("{}: {what}", case.name))
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let errors = [
        check(&qkv, &qkv_ref, "qkv"),
        q_out
            .as_ref()
            .map_or(0.0, |q| check(q, q_ref.as_ref().unwrap(), "q_out")),
        check(&k, &k_ref, "K cache"),
        check(&v, &v_ref, "V cache"),
    ];
    eprintln!(
        "{}: max error {:.2e}",
        case.name,
        errors.iter().fold(0.0f64, |a, &b| a.max(b))
    );
    let flag = ctx().read_buffer(&flag).expect("flag");
    let outputs = [Some(&qkv), q_out.as_ref(), Some(&k), Some(&v)];
    let bytes = outputs
        .into_iter()
        .flatten()
        .flat_map(|e| ctx().read_buffer(&e.buffer).expect("read back"))
        .collect();
    Ok(Ran {
        flag: u32::from_le_bytes(flag[..4].try_into().unwrap()),
        dispatches: report.dispatches,
        bytes,
    })
}

/// Whether the case stores f16 (which the GL backend cannot).
fn uses_f16(case: &Case) -> bool {
    case.dtype == Dtype::F16 || case.cache_dtype == Dtype::F16
}

fn has_f16() -> bool {
    ctx()
        .device()
        .features()
        .contains(wgpu::Features::SHADER_F16)
}

/// QK-norm weights of `d` values each.
fn norm(d: u64, weight: NormWeight) -> QkNorm {
    QkNorm {
        q_weight: (0..d).map(|i| 0.5 + (i as f32 * 0.37).sin()).collect(),
        k_weight: (0..d).map(|i| 0.25 * (i as f32 * 1.3).cos()).collect(),
        eps: 1e-6,
        weight,
    }
}

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
fn positions_or_slots_past_the_cache_are_skipped_and_flagged() {
    let slots = Case {
        index: Index::Slots(vec![0, 31, 2, -1]),
        cache_len: 8,
        ..Case::new(
            "a slot past the cache",
            [1, 4, 2, 1, 16],
            Positions::Start(0),
        )
    };
    assert_eq!(run(&slots, 7).expect("run"), 1, "slot 31 of 8");
    let ids = Case {
        cache_len: 8,
        ..Case::new(
            "an id past the cache",
            [2, 2, 2, 2, 16],
            Positions::Ids(vec![0, 3, 8, 1]),
        )
    };
    assert_eq!(run(&ids, 8).expect("run"), 1, "position 8 of 8");
}

#[test]
fn an_empty_cache_skips_and_flags_every_token() {
    // [batch 1, seq 5, 4 Q heads, 2 KV heads, head_dim 16] at offset 3, caches of no entries
    // at offsets (2, 1) and (0, 0): Q is still rotated, nothing is cached, every token is
    // flagged (positions and slots on the GPU are all past an empty cache).
    for offsets in [[2, 1], [0, 0]] {
        for (index, positions) in [
            (
                Index::Position { bshd: false },
                Positions::Ids((0..5).collect()),
            ),
            (Index::Slots((0..5).collect()), Positions::Start(1)),
            (Index::Slots(vec![-1, 0, 3, -1, 9]), Positions::Start(0)),
        ] {
            let case = Case {
                cache_len: 0,
                cache_offsets: offsets,
                offset: 3,
                index,
                ..Case::new("an empty cache", [1, 5, 4, 2, 16], positions)
            };
            let flag = run(&case, 11).unwrap_or_else(|e| panic!("{case:?}: {e}"));
            assert_eq!(flag, 1, "{case:?}");
        }
    }
    // Positions known on the host are checked there: the cache is too short.
    let start = Case {
        cache_len: 0,
        ..Case::new("an empty cache", [1, 5, 4, 2, 16], Positions::Start(0))
    };
    assert!(
        matches!(
            run(&start, 12),
            Err(Error::KvCacheTooShort {
                position: 4,
                len: 0
            })
        ),
        "{:?}",
        run(&start, 12)
    );
}

/// Two tokens of one call that go to the same cache entry (ids `[1, 1]`, or vLLM's
/// duplicate slot): every element of the entry holds one of the two tokens' values, never a
/// mix of their bits, in every cache dtype and width; nothing else in the caches changes.
#[test]
fn tokens_sharing_a_cache_entry_leave_one_of_their_values() {
    for (d, cache_dtype) in [
        (2, Dtype::BF16),
        (6, Dtype::BF16),
        (16, Dtype::BF16),
        (6, Dtype::F32),
        (6, Dtype::F16),
    ] {
        if cache_dtype == Dtype::F16 && !has_f16() {
            continue;
        }
        for slots in [false, true] {
            let index = if slots {
                Index::Slots(vec![1, 1])
            } else {
                Index::Position { bshd: false }
            };
            let positions = if slots {
                Positions::Start(3)
            } else {
                Positions::Ids(vec![1, 1])
            };
            let case = Case {
                cache_len: 4,
                cache_dtype,
                index,
                ..Case::new("duplicate entry", [1, 2, 1, 1, d], positions)
            };
            shared_entry_holds_one_token(&case);
        }
    }
}

fn shared_entry_holds_one_token(case: &Case) {
    let mut rng = Rng::new(40 + case.dims[4]);
    let [batch, seq, q_heads, kv_heads, d] = case.dims;
    let qkv_layout = Layout::bshd(Dims {
        batch,
        heads: q_heads + 2 * kv_heads,
        seq,
        head_dim: d,
    });
    let cache_layout = Layout::bhsd([1, kv_heads, case.cache_len, d]).with_offset(GUARD);
    let qkv = Elements::new(&mut rng, case.dtype, &[(qkv_layout, true)], GUARD).expect("layout");
    let k =
        Elements::new(&mut rng, case.cache_dtype, &[(cache_layout, false)], GUARD).expect("layout");
    let v =
        Elements::new(&mut rng, case.cache_dtype, &[(cache_layout, false)], GUARD).expect("layout");
    let pos = case.positions.as_ref().map(|p| u32_buffer(p));
    let slot_list: Vec<i32> = match &case.index {
        Index::Slots(s) => s.clone(),
        Index::Position { .. } => vec![],
    };
    let slot_words: Vec<u32> = slot_list.iter().map(|&s| s as u32).collect();
    let slot_buffer = u32_buffer(&slot_words);
    fn view(data: &Elements, layout: Layout) -> TensorView<'_> {
        TensorView::new(&data.buffer, layout).with_dtype(data.dtype)
    }
    let call = QkvCall::new(
        view(&qkv, qkv_layout),
        kv_heads,
        pos.as_ref().map(ArrayView::new),
        KvCache {
            k: view(&k, cache_layout),
            v: view(&v, cache_layout),
            index: match case.index {
                Index::Slots(_) => CacheIndex::Slots(ArrayView::new(&slot_buffer)),
                Index::Position { .. } => CacheIndex::Position,
            },
            overflow_flag: None,
        },
    );
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    ctx()
        .encode_qkv(&mut encoder, &case.spec, &call)
        .expect("encode");
    ctx().queue().submit([encoder.finish()]);
    // What each token alone leaves in the caches: the other's slot set to -1.
    let host: HostPositions<'_> = case.positions.as_ref().map(|p| &p[..]);
    let alone = |token: usize| {
        let (mut x, mut kr, mut vr) = (qkv.values(), k.values(), v.values());
        let mut only: Vec<i32> = match &case.index {
            Index::Slots(s) => s.clone(),
            Index::Position { .. } => vec![1; seq as usize],
        };
        for (t, s) in only.iter_mut().enumerate() {
            if t != token {
                *s = -1;
            }
        }
        reference::qkv_cache(
            &case.spec,
            &qkv_layout,
            &mut x,
            kv_heads,
            host,
            None,
            (&cache_layout, &mut kr),
            (&cache_layout, &mut vr),
            HostCacheIndex::Slots(&only),
            None,
        );
        (kr, vr)
    };
    let (a, b) = (alone(0), alone(1));
    let tol = 2f64.powi(-8);
    for (data, wa, wb, what) in [(&k, &a.0, &b.0, "K"), (&v, &a.1, &b.1, "V")] {
        let got = data.read();
        for (i, &g) in got.iter().enumerate() {
            let g_value = common::decode_elem(data.dtype, g);
            let near = |w: f64| (g_value - w).abs() <= tol * w.abs() + 1e-6 * w.abs().max(1.0);
            let untouched = wa[i].to_bits()
                == common::decode_elem(data.dtype, data.bits[i]).to_bits()
                && wb[i].to_bits() == wa[i].to_bits();
            if untouched {
                assert_eq!(g, data.bits[i], "{case:?}: {what} element {i} changed");
            } else {
                assert!(
                    near(wa[i]) || near(wb[i]),
                    "{case:?}: {what} element {i} holds {g:#x} = {g_value}, neither token's \
                     ({} or {})",
                    wa[i],
                    wb[i]
                );
            }
        }
    }
}

#[test]
fn bad_fused_calls_are_typed_errors() {
    // HF's DeepSeek order for K with Q in place would pair a permuted K with an unpermuted Q.
    let in_place = Case {
        spec: RopeSpec::new()
            .pair_layout(PairLayout::Interleaved)
            .output_order(OutputOrder::PairHalves),
        ..Case::new(
            "PairHalves, Q in place",
            [1, 4, 2, 1, 16],
            Positions::Start(0),
        )
    };
    assert!(
        matches!(run(&in_place, 1), Err(Error::PairHalvesInPlace { .. })),
        "{:?}",
        run(&in_place, 1)
    );
    let start = Case {
        cache_len: 8,
        ..Case::new(
            "start past the cache",
            [1, 4, 2, 1, 16],
            Positions::Start(6),
        )
    };
    assert!(
        matches!(
            run(&start, 1),
            Err(Error::KvCacheTooShort {
                position: 9,
                len: 8
            })
        ),
        "{:?}",
        run(&start, 1)
    );
    let short_weights = Case {
        norm: Some(norm(8, NormWeight::Scale)),
        q_out: true,
        ..Case::new(
            "QK-norm weights too short",
            [1, 4, 2, 1, 16],
            Positions::Start(0),
        )
    };
    assert!(matches!(
        run(&short_weights, 4),
        Err(Error::ShapeMismatch { .. })
    ));
    let slots_and_offsets = Case {
        index: Index::Slots(vec![0, 1, 2, 3]),
        ..Case::new(
            "slots with varlen offsets",
            [1, 4, 2, 1, 16],
            Positions::Varlen {
                cu_seqlens: vec![0, 2, 4],
                num_seqs: 2,
                offsets: Some(vec![1, 1]),
            },
        )
    };
    assert!(matches!(
        run(&slots_and_offsets, 2),
        Err(Error::Unsupported(_))
    ));
    // Shapes: a head_dim other than the spec's, kv_heads that do not fit, a cache of the
    // wrong shape, K and V caches of different dtypes, and a cache over the input.
    let b = |bytes: u64| {
        ctx().device().create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        })
    };
    let (qkv_buf, k_buf, v_buf) = (b(4096), b(4096), b(4096));
    let qkv = TensorView::new(
        &qkv_buf,
        Layout::bshd(Dims {
            batch: 1,
            heads: 6,
            seq: 2,
            head_dim: 16,
        }),
    );
    let cache = |buf| TensorView::new(buf, Layout::bhsd([1, 2, 8, 16]));
    let kv = KvCache {
        k: cache(&k_buf),
        v: cache(&v_buf),
        index: CacheIndex::Position,
        overflow_flag: None,
    };
    let spec = RopeSpec::new();
    let encode = |call: &QkvCall<'_>| {
        let mut encoder = ctx().device().create_command_encoder(&Default::default());
        ctx().encode_qkv(&mut encoder, &spec, call)
    };
    let good = QkvCall::new(qkv, 2, Positions::Start(0), kv);
    encode(&good).expect("the good call");
    // f32 positions are encode_rope's and the sinusoidal encoding's, not the fused call's.
    let float_ids = u32_buffer(&[0.5f32.to_bits(); 2]);
    let float = QkvCall::new(qkv, 2, Positions::Float(ArrayView::new(&float_ids)), kv);
    assert!(matches!(encode(&float), Err(Error::PositionsMismatch(_))));
    // A fourth position axis (RopeSpec::axes_rope4) is encode_rope's only.
    let four_ids = u32_buffer(&[1; 4 * 2]);
    let four = QkvCall::new(qkv, 2, Positions::Axes(ArrayView::new(&four_ids)), kv);
    let spec4 = RopeSpec::new().axes_rope4([2, 2, 2, 2]);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let e = ctx().encode_qkv(&mut encoder, &spec4, &four);
    assert!(matches!(e, Err(Error::Unsupported(_))), "{e:?}");
    let wrong_heads = QkvCall {
        kv_heads: 3,
        ..good
    };
    assert!(matches!(encode(&wrong_heads), Err(Error::Unsupported(_))));
    let short_cache = KvCache {
        k: TensorView::new(&k_buf, Layout::bhsd([1, 1, 8, 16])),
        ..kv
    };
    assert!(matches!(
        encode(&QkvCall {
            cache: short_cache,
            ..good
        }),
        Err(Error::ShapeMismatch { .. })
    ));
    let mixed = KvCache {
        v: cache(&v_buf).with_dtype(Dtype::BF16),
        ..kv
    };
    assert!(matches!(
        encode(&QkvCall {
            cache: mixed,
            ..good
        }),
        Err(Error::Unsupported(_))
    ));
    let over_input = KvCache {
        k: cache(&qkv_buf),
        ..kv
    };
    assert!(matches!(
        encode(&QkvCall {
            cache: over_input,
            ..good
        }),
        Err(Error::TensorsOverlap { .. })
    ));
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

#[cfg(feature = "capture")]
#[test]
fn qk_norm_sums_by_subgroups_where_the_device_has_them() {
    use wgpu_posenc::capture::Capture;
    // Qwen3's shapes in small: head_dim 128 in vec4 lanes is 16 lane groups, two to each of
    // a token's 8 invocations.
    let case = Case {
        norm: Some(norm(128, NormWeight::Scale)),
        cache_offsets: [8, 20],
        ..Case::new(
            "QK-norm, head_dim 128, vec4, GQA 4/2",
            [2, 9, 4, 2, 128],
            Positions::Start(3),
        )
    };
    let device = ctx().device();
    let fits = device.features().contains(wgpu::Features::SUBGROUP)
        && device.adapter_info().subgroup_min_size >= 8;
    if device.adapter_info().backend == wgpu::Backend::Vulkan {
        // lavapipe's subgroups are 8 wide; so are or wider those of every Vulkan GPU.
        assert!(fits, "no subgroups of 8 on {:?}", device.adapter_info());
    }
    let mut outputs = Vec::new();
    for (on, subgroups) in [(true, fits), (false, false), (true, fits)] {
        let capture = Capture::new();
        let posenc = ctx().clone().with_subgroups(on).with_capture(&capture);
        outputs.push(run_on(&posenc, &case, 21).expect("run").bytes);
        let passes = capture.take_passes();
        let sources: Vec<&str> = passes
            .iter()
            .flat_map(|p| &p.dispatches)
            .map(|d| d.source.as_str())
            .collect();
        assert!(!sources.is_empty());
        for source in sources {
            assert_eq!(source.contains("enable subgroups;"), subgroups, "on: {on}");
        }
    }
    // Both sums are checked against the reference above; each is the same to the bit from
    // one run to the next.
    assert!(outputs[0] == outputs[2], "two runs of the same call differ");
}

#[cfg(feature = "capture")]
#[test]
fn every_block_of_a_split_call_fits_its_binding() {
    use wgpu_posenc::capture::Capture;
    // A packed BSHD projection at odd element offsets, two batch rows, Q in place and out,
    // under binding limits a few bytes around a block of tokens. A token is 5 heads of 10
    // f32 (200 bytes; 40 in Q out; neither a multiple of the 256-byte alignment), so blocks
    // of one size start at other distances from an aligned offset: a plan sized by its first block only had
    // later windows past the limit (BindingTooSmall for a valid call). Each run is checked
    // against the reference (`run_on`), and every storage window recorded against the limit.
    let align = 256;
    let mut runs = 0;
    for offset in [1u64, 3, 13, 29, 47, 63] {
        for q_out in [false, true] {
            let case = Case {
                offset,
                q_out,
                cache_len: 37,
                ..Case::new("split", [2, 37, 3, 1, 10], Positions::Start(0))
            };
            // Both caches are bound whole: 2 x 37 x 10 f32 = 2960 bytes each, with slack at
            // most 3232. Q out is BHSD: n tokens of its 3 heads span 2 x 37 + n rows of 40
            // bytes.
            let (fixed, token, sizes) = if q_out {
                (2 * 37 * 40, 40, [8u64, 9, 13])
            } else {
                (0, 200, [17, 18, 23])
            };
            for tokens in sizes {
                for delta in (0..align).step_by(24) {
                    let cap = fixed + tokens * token + delta;
                    let capture = Capture::new();
                    let posenc = ctx()
                        .clone()
                        .with_storage_offset_alignment(align)
                        .with_max_binding_size(cap)
                        .with_capture(&capture);
                    let ran = run_on(&posenc, &case, 7 + offset).unwrap_or_else(|e| {
                        panic!("offset {offset}, q_out {q_out}, cap {cap}: {e}")
                    });
                    assert!(
                        ran.dispatches > 2,
                        "cap {cap}: {} dispatches",
                        ran.dispatches
                    );
                    for d in capture.take_passes().iter().flat_map(|p| &p.dispatches) {
                        for b in d.bindings.iter().filter(|b| !b.uniform) {
                            assert!(
                                b.size <= cap,
                                "offset {offset}, cap {cap}: binding {} spans {} bytes",
                                b.binding,
                                b.size
                            );
                        }
                    }
                    runs += 1;
                }
            }
        }
    }
    assert_eq!(runs, 6 * 2 * 3 * 11);
}
