//! Random fused QKV calls (`PosEnc::encode_qkv`): every cache kind and dtype, duplicate and
//! out-of-range positions and slots, empty and huge dims, Q in place or out, QK-norm on and
//! off, with and without the overflow flag. Each is an error, or matches the reference with
//! every element outside the outputs unchanged: a cache entry that several tokens write
//! holds one of their values in each element, and the flag says whether a token was past
//! the cache.

use std::collections::HashMap;

use proptest::prelude::*;
use wgpu_posenc::reference::{self, HostCacheIndex};
use wgpu_posenc::{
    ArrayView, CacheIndex, Dims, Dtype, HostPositions, KvCache, Layout, NormWeight, OutputOrder,
    Positions, QkNorm, QkvCall, RopeSpec, Scaling, TensorView,
};

use super::common::{self, Elements, ctx, u32_buffer};

/// Elements of guard after every buffer's views.
const PAD: u64 = 5;

#[derive(Clone, Debug)]
pub struct FusedCase {
    /// `[batch, seq, q_heads, kv_heads, head_dim]` of the input; `kv_heads` of the call.
    dims: [u64; 5],
    call_kv_heads: u64,
    bshd: bool,
    offset: u64,
    dtype: Dtype,
    cache_dtype: Dtype,
    cache_len: u64,
    cache_bshd: bool,
    /// The cache's batch extent: the right one (batch, or 1 with slots) or not.
    cache_batch_wrong: bool,
    /// K and V caches in one buffer, V right after K (or overlapping it).
    one_cache_buffer: Option<bool>,
    slots: Option<Vec<i32>>,
    positions: Positions<Vec<u32>>,
    q_out: bool,
    /// QK-norm weights of this length (head_dim for a valid call).
    norm: Option<(u64, NormWeight, f32)>,
    flag: bool,
    spec: RopeSpec,
    seed: u64,
    /// Whether the context may sum a QK-norm's heads through subgroups.
    subgroups: bool,
    /// One call in three: a binding limit near the span of a block of `.0` tokens, `.1`
    /// bytes over it, so that the call is split into blocks at many offsets.
    cap: Option<(u64, u64)>,
}

fn dtype() -> impl Strategy<Value = Dtype> {
    prop_oneof![3 => Just(Dtype::F32), 2 => Just(Dtype::BF16), 1 => Just(Dtype::F16)]
}

pub fn fused_strategy() -> impl Strategy<Value = FusedCase> {
    let dims = (
        prop_oneof![6 => 1u64..3, 1 => Just(0u64)],
        prop_oneof![6 => 1u64..7, 1 => Just(0u64)],
        prop_oneof![6 => 1u64..5, 1 => Just(0u64)],
        prop_oneof![6 => 1u64..3, 1 => Just(0u64)],
        prop_oneof![
            8 => prop::sample::select(vec![2u64, 4, 6, 8, 16, 24, 32, 64, 128]),
            1 => prop::sample::select(vec![0u64, 3, 1 << 21, 1 << 40]),
        ],
    );
    let spec = (
        any::<bool>(),
        prop_oneof![10 => Just(None), 1 => (0u64..40).prop_map(Some)],
        prop_oneof![
            4 => Just(Scaling::Default),
            1 => Just(Scaling::Linear { factor: 2.0 }),
            1 => Just(Scaling::llama3()),
            1 => Just(Scaling::yarn(4.0, 16)),
            1 => Just(Scaling::DynamicNtk { factor: 2.0, original_max_position_embeddings: 8 }),
        ],
        prop_oneof![3 => Just(None), 1 => (1u64..64).prop_map(Some)],
        prop_oneof![4 => Just(OutputOrder::Pairs), 1 => Just(OutputOrder::PairHalves)],
    )
        .prop_map(|(interleaved, rotary_dim, scaling, seq_len, order)| {
            let mut spec = RopeSpec::new()
                .pair_layout(if interleaved {
                    wgpu_posenc::PairLayout::Interleaved
                } else {
                    wgpu_posenc::PairLayout::HalfSplit
                })
                .scaling(scaling)
                .output_order(order);
            spec.rotary_dim = rotary_dim;
            spec.scaling_seq_len = seq_len;
            spec
        });
    (
        (dims, 0u8..8, any::<bool>(), 0u64..12),
        (dtype(), dtype(), 0u64..10, any::<bool>(), 0u8..20),
        (0u8..10, 0u8..5, any::<bool>(), 0u8..6, any::<bool>()),
        spec,
        any::<u64>(),
    )
        .prop_map(
            |(
                ((b, s, q, kv, d), kv_call, bshd, offset),
                (dtype, cache_dtype, cache_len, cache_bshd, odd),
                (index_kind, pos_kind, q_out, norm_kind, flag),
                spec,
                seed,
            )| {
                let mut rng = common::Rng::new(seed);
                let tokens = b * s;
                let len = cache_len as i64;
                // Slots and positions in and past the cache, duplicates likely.
                let entry = |rng: &mut common::Rng| rng.range(0, (len + 3) as u64) as i64 - 1;
                let slots = (index_kind < 4).then(|| {
                    let n = if odd == 0 {
                        tokens.saturating_sub(1)
                    } else {
                        tokens
                    };
                    (0..n).map(|_| entry(&mut rng) as i32).collect()
                });
                let id = |rng: &mut common::Rng| (entry(rng) + 1) as u32;
                let positions = match pos_kind {
                    0 => Positions::Start(rng.range(0, cache_len + 2) as u32),
                    1 if odd == 1 => Positions::Start(u32::MAX - 2),
                    1 => Positions::BatchStarts((0..b).map(|_| id(&mut rng)).collect()),
                    2 | 3 => {
                        let n = if odd == 2 {
                            tokens.saturating_sub(1)
                        } else {
                            tokens
                        };
                        Positions::Ids((0..n).map(|_| id(&mut rng)).collect())
                    }
                    _ => {
                        // Packed sequences whose positions restart: duplicates with a
                        // position-indexed cache.
                        let mut cu = vec![0u32];
                        while u64::from(*cu.last().unwrap()) < s {
                            let next = (u64::from(*cu.last().unwrap()) + rng.range(1, 4)).min(s);
                            cu.push(next as u32);
                        }
                        if cu.len() == 1 {
                            cu.push(0);
                        }
                        let num_seqs = cu.len() as u32 - 1;
                        Positions::Varlen {
                            cu_seqlens: cu,
                            num_seqs,
                            offsets: None,
                        }
                    }
                };
                // Weights for heads the host can hold (a huge head gets a short list).
                let d_norm = if d > 4096 { 8 } else { d };
                let norm = match norm_kind {
                    0 => Some((d_norm, NormWeight::Scale, 1e-6)),
                    1 => Some((d_norm, NormWeight::OnePlus, 1e-5)),
                    2 if odd == 3 => Some((d_norm.saturating_sub(2), NormWeight::Scale, 1e-6)),
                    2 if odd == 4 => Some((d_norm, NormWeight::Scale, -1.0)),
                    _ => None,
                };
                FusedCase {
                    dims: [b, s, q, kv, d],
                    call_kv_heads: if kv_call == 0 && odd == 9 { kv + 1 } else { kv },
                    bshd,
                    offset: if offset > 8 { offset * 4 } else { offset },
                    dtype,
                    cache_dtype,
                    cache_len,
                    cache_bshd,
                    cache_batch_wrong: odd == 5,
                    one_cache_buffer: match odd {
                        6 => Some(true),
                        7 => Some(false),
                        _ => None,
                    },
                    slots,
                    positions,
                    q_out,
                    norm,
                    flag,
                    spec,
                    seed,
                    // Three in four: the subgroup sum where it fits (not a draw of the rng: the
                    // other fields of recorded seeds stay as they were).
                    subgroups: seed % 4 != 0,
                    // Also from the seed's bits, for the same reason.
                    cap: ((seed >> 8) % 3 == 0).then(|| (1 + (seed >> 12) % 4, (seed >> 16) % 320)),
                }
            },
        )
}

/// The call's views, laid out from the case.
struct Layouts {
    qkv: Layout,
    q_out: Layout,
    k: Layout,
    v: Layout,
}

fn layouts(c: &FusedCase) -> Layouts {
    let [b, s, q, kv, d] = c.dims;
    let heads = q + 2 * kv;
    let qkv = if c.bshd {
        Layout::bshd(Dims {
            batch: b,
            heads,
            seq: s,
            head_dim: d,
        })
    } else {
        Layout::bhsd([b, heads, s, d])
    }
    .with_offset(c.offset);
    let q_out = Layout::bhsd([b, q, s, d]).with_offset(3);
    let right = if c.slots.is_some() { 1 } else { b };
    let cache_batch = if c.cache_batch_wrong {
        right + 1
    } else {
        right
    };
    let cache = |offset| {
        if c.cache_bshd {
            Layout::bshd(Dims {
                batch: cache_batch,
                heads: kv,
                seq: c.cache_len,
                head_dim: d,
            })
        } else {
            Layout::bhsd([cache_batch, kv, c.cache_len, d])
        }
        .with_offset(offset)
    };
    let k = cache(2);
    let k_end = k.end().unwrap_or(0);
    let v = match c.one_cache_buffer {
        Some(true) => cache(k_end + 1),
        // Overlapping K: an error.
        Some(false) => cache(3),
        None => cache(1),
    };
    Layouts { qkv, q_out, k, v }
}

/// `Ok(true)` when the call ran and matched the reference, `Ok(false)` when it was refused.
pub fn run_fused(c: &FusedCase) -> Result<bool, String> {
    let mut rng = common::Rng::new(c.seed);
    let l = layouts(c);
    let [b, _, _, _, d] = c.dims;
    let qkv = Elements::new(&mut rng, c.dtype, &[(l.qkv, true)], PAD);
    let q_out = Elements::new(&mut rng, c.dtype, &[(l.q_out, false)], PAD);
    let caches = match c.one_cache_buffer {
        Some(_) => {
            let both = Elements::new(&mut rng, c.cache_dtype, &[(l.k, false), (l.v, false)], PAD);
            (both, None)
        }
        None => (
            Elements::new(&mut rng, c.cache_dtype, &[(l.k, false)], PAD),
            Elements::new(&mut rng, c.cache_dtype, &[(l.v, false)], PAD),
        ),
    };
    let (Some(qkv), Some(q_out), Some(k)) = (qkv, q_out, caches.0) else {
        return huge_is_refused(c, &l);
    };
    let v = caches.1;
    let v_data = v.as_ref().unwrap_or(&k);
    // An empty array is the one word of its buffer, viewed from its end.
    fn array(b: &wgpu::Buffer, n: usize) -> ArrayView<'_> {
        ArrayView::at(b, if n == 0 { 4 } else { 0 })
    }
    let pos_buffers = c.positions.as_ref().map(|p| (u32_buffer(p), p.len()));
    let slot_words: Vec<u32> = c.slots.iter().flatten().map(|&x| x as u32).collect();
    let slot_buffer = u32_buffer(&slot_words);
    let flag = u32_buffer(&[0]);
    let norm = qk_norm(c);
    fn view(data: &Elements, layout: Layout) -> TensorView<'_> {
        TensorView::new(&data.buffer, layout).with_dtype(data.dtype)
    }
    let mut call = QkvCall::new(
        TensorView::new(&qkv.buffer, l.qkv).with_dtype(c.dtype),
        c.call_kv_heads,
        pos_buffers.as_ref().map(|(b, n)| array(b, *n)),
        KvCache {
            k: view(&k, l.k),
            v: view(v_data, l.v),
            index: match c.slots {
                Some(_) => CacheIndex::Slots(array(&slot_buffer, slot_words.len())),
                None => CacheIndex::Position,
            },
            overflow_flag: c.flag.then(|| ArrayView::new(&flag)),
        },
    );
    if c.q_out {
        call = call.with_q_out(view(&q_out, l.q_out));
    }
    if let Some(norm) = &norm {
        call = call.with_qk_norm(norm);
    }
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let mut posenc = ctx().clone().with_subgroups(c.subgroups);
    let cap = binding_cap(c, &l);
    if let Some(cap) = cap {
        posenc = posenc.with_max_binding_size(cap);
    }
    let result = posenc.encode_qkv(&mut encoder, &c.spec, &call);
    if let (Some(cap), Err(e @ wgpu_posenc::Error::BindingTooSmall { .. })) = (cap, &result)
        && fits_anywhere(c, &l, cap)
    {
        return Err(format!(
            "refused under a binding of {cap} bytes, where one token of every view at any \
             offset and each cache whole fit: {e}"
        ));
    }
    // HF's pair-halves order needs Q out (K goes to its cache) and interleaved pairs.
    if c.spec.output_order == OutputOrder::PairHalves
        && (!c.q_out || c.spec.pair_layout != wgpu_posenc::PairLayout::Interleaved)
        && result.is_ok()
    {
        return Err(
            "a fused call in PairHalves order ran with Q in place or half-split pairs".into(),
        );
    }
    if result.is_err() {
        return Ok(false); // nothing was submitted
    }
    ctx().queue().submit([encoder.finish()]);

    // The reference: Q (in place or out) from the whole call; the caches token by token.
    let host: HostPositions<'_> = c.positions.as_ref().map(|p| &p[..]);
    let kv_heads = c.call_kv_heads;
    let (mut want_qkv, mut want_q) = (qkv.values(), q_out.values());
    // (No cache entry here: the caches come token by token below.)
    let none = Layout::bhsd([b, kv_heads, 0, d]);
    reference::qkv_cache(
        &c.spec,
        &l.qkv,
        &mut want_qkv,
        kv_heads,
        host,
        c.q_out.then_some((&l.q_out, &mut want_q[..])),
        (&none, &mut []),
        (&none, &mut []),
        HostCacheIndex::Position,
        norm.as_ref(),
    );
    qkv.check(&want_qkv, "qkv")?;
    if c.q_out {
        q_out.check(&want_q, "q_out")?;
    }
    let (candidates, past) = cache_candidates(c, &l, &qkv, k.values(), v_data.values(), host);
    for (data, which) in [(&k, 0usize), (v_data, 1)] {
        if which == 1 && v.is_none() {
            continue; // one buffer holds both: checked with K's
        }
        for (i, &g) in data.read().iter().enumerate() {
            match candidates[which].get(&i) {
                None => {
                    if g != data.bits[i] {
                        return Err(format!("cache {which}: element {i} changed"));
                    }
                }
                Some(values) => {
                    if !values.iter().any(|&w| data.near(g, w)) {
                        return Err(format!(
                            "cache {which}: element {i} is {}, none of {values:?}",
                            common::decode_elem(data.dtype, g)
                        ));
                    }
                }
            }
        }
    }
    if c.flag {
        let got = ctx().read_buffer(&flag).expect("flag")[0];
        if u32::from(got) != u32::from(past) {
            return Err(format!("overflow flag {got}, expected {}", u32::from(past)));
        }
    }
    Ok(true)
}

/// What each cache element may hold (the values of the tokens that write it, as the
/// reference writes each token alone, in K's and V's arrays; one array when they share a
/// buffer), and whether a token was past the cache.
fn cache_candidates(
    c: &FusedCase,
    l: &Layouts,
    qkv: &Elements,
    k_init: Vec<f64>,
    v_init: Vec<f64>,
    host: HostPositions<'_>,
) -> ([HashMap<usize, Vec<f64>>; 2], bool) {
    let [batch, seq, _, _, _] = c.dims;
    let len = c.cache_len;
    let one_buffer = c.one_cache_buffer.is_some();
    let mut out: [HashMap<usize, Vec<f64>>; 2] = Default::default();
    let mut past = false;
    // Frequencies from the whole call's length, as the GPU computes them.
    let mut spec = c.spec.clone();
    if spec.scaling_seq_len.is_none() {
        spec.scaling_seq_len = Some(host.seq_len(&l.qkv, 1));
    }
    let x = qkv.values();
    let norm = qk_norm(c);
    for bb in 0..batch {
        for ss in 0..seq {
            let entry = match &c.slots {
                Some(slots) => i64::from(slots[(bb * seq + ss) as usize]),
                None => i64::from(host.position(batch, seq, bb, ss, 0).expect("position")),
            };
            if entry < 0 {
                continue;
            }
            if entry as u64 >= len {
                past = true;
                continue;
            }
            // This token alone: its row of qkv, the cache (its batch row of it).
            let mut token = l.qkv;
            token.offset += bb * token.strides[0] + ss * token.strides[2];
            token.shape[0] = 1;
            token.shape[2] = 1;
            let row = |cache: &Layout| {
                let mut r = *cache;
                if c.slots.is_none() {
                    r.offset += bb * r.strides[0];
                    r.shape[0] = 1;
                }
                r
            };
            let (kr, vr) = (row(&l.k), row(&l.v));
            let mut kx = k_init.clone();
            let mut vx = v_init.clone();
            let mut xx = x.clone();
            let ids = [entry as u32];
            let slot = [0i32];
            let position = host.position(batch, seq, bb, ss, 0).expect("position");
            let pos = [position];
            // With slots the entry is the slot; by position it is the position itself.
            let (positions, index) = match &c.slots {
                Some(_) => (HostPositions::Ids(&pos), HostCacheIndex::Slots(&slot)),
                None => (HostPositions::Ids(&ids), HostCacheIndex::Position),
            };
            let mut slot_layouts = (kr, vr);
            if c.slots.is_some() {
                // Slot `entry` is the only one: shift the cache so that it is entry 0.
                slot_layouts.0.offset += entry as u64 * kr.strides[2];
                slot_layouts.1.offset += entry as u64 * vr.strides[2];
                slot_layouts.0.shape[2] = 1;
                slot_layouts.1.shape[2] = 1;
            }
            reference::qkv_cache(
                &spec,
                &token,
                &mut xx,
                c.call_kv_heads,
                positions,
                None,
                (&slot_layouts.0, &mut kx),
                (&slot_layouts.1, &mut vx),
                index,
                norm.as_ref(),
            );
            // K and V in one buffer write disjoint elements of one array: both go to its
            // candidates.
            note(&mut out[0], &k_init, &kx);
            note(&mut out[usize::from(!one_buffer)], &v_init, &vx);
        }
    }
    (out, past)
}

/// The case's QK-norm: `n` weights of each kind (head_dim for a valid call).
fn qk_norm(c: &FusedCase) -> Option<QkNorm> {
    c.norm.map(|(n, weight, eps)| QkNorm {
        q_weight: (0..n).map(|i| 0.5 + (i as f32 * 0.37).sin()).collect(),
        k_weight: (0..n).map(|i| 0.25 * (i as f32 * 1.3).cos()).collect(),
        eps,
        weight,
    })
}

/// The case's binding limit: the bytes a block of `tokens` tokens of one batch row of the
/// input spans, plus `extra`, and never below what the caches need whole (bound whole, they
/// would refuse every smaller limit).
fn binding_cap(c: &FusedCase, l: &Layouts) -> Option<u64> {
    let (tokens, extra) = c.cap?;
    let elem = c.dtype.size();
    let span = |layout: &Layout, n: u64| {
        let mut one = *layout;
        one.shape[0] = one.shape[0].min(1);
        one.shape[2] = one.shape[2].min(n);
        one.end()
            .ok()
            .map(|end| end.saturating_sub(one.offset) * elem)
    };
    let block = span(&l.qkv, tokens)?;
    let caches = span_whole(&l.k, c.cache_dtype)?.max(span_whole(&l.v, c.cache_dtype)?);
    Some(block.max(caches + worst_slack()) + extra)
}

/// Bytes a window may add to a span: its start rounded down to the storage alignment, its
/// end up to 16 bytes.
fn worst_slack() -> u64 {
    u64::from(ctx().device().limits().min_storage_buffer_offset_alignment).max(16) + 16
}

fn span_whole(layout: &Layout, dtype: Dtype) -> Option<u64> {
    layout
        .end()
        .ok()
        .map(|end| end.saturating_sub(layout.offset) * dtype.size())
}

/// Whether every window a split call can need fits `cap`: one token of every head of the
/// input (and of Q out) at any offset, and each cache whole.
fn fits_anywhere(c: &FusedCase, l: &Layouts, cap: u64) -> bool {
    let token = |layout: &Layout| {
        let mut one = *layout;
        one.shape[0] = one.shape[0].min(1);
        one.shape[2] = one.shape[2].min(1);
        span_whole(&one, c.dtype)
    };
    let mut spans = vec![
        token(&l.qkv),
        span_whole(&l.k, c.cache_dtype),
        span_whole(&l.v, c.cache_dtype),
    ];
    if c.q_out {
        spans.push(token(&l.q_out));
    }
    spans
        .into_iter()
        .all(|s| s.is_some_and(|s| s + worst_slack() <= cap))
}

/// Adds each element `after` changed from `before` to the candidates.
fn note(candidates: &mut HashMap<usize, Vec<f64>>, before: &[f64], after: &[f64]) {
    for (i, (a, b)) in after.iter().zip(before).enumerate() {
        if a.to_bits() != b.to_bits() {
            candidates.entry(i).or_default().push(*a);
        }
    }
}

/// A case whose views are too large to hold: the call on small buffers must be refused
/// (or be a no-op on empty views), never panic.
fn huge_is_refused(c: &FusedCase, l: &Layouts) -> Result<bool, String> {
    let small = ctx().device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("random fused call, small"),
        size: 256,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let (small_v, ids) = (
        ctx().device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("random fused call, small V"),
            size: 256,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        }),
        u32_buffer(&[0; 8]),
    );
    let positions = c.positions.as_ref().map(|_| ArrayView::new(&ids));
    let call = QkvCall::new(
        TensorView::new(&small, l.qkv).with_dtype(c.dtype),
        c.call_kv_heads,
        positions,
        KvCache {
            k: TensorView::new(&small_v, l.k).with_dtype(c.cache_dtype),
            v: TensorView::new(&small_v, l.v).with_dtype(c.cache_dtype),
            index: CacheIndex::Position,
            overflow_flag: None,
        },
    );
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let [b, s, ..] = c.dims;
    match ctx().encode_qkv(&mut encoder, &c.spec, &call) {
        Ok(_) if b * s != 0 => Err("a call over views larger than their buffers ran".into()),
        _ => Ok(false),
    }
}
