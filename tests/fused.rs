//! The fused attention preprocessing call (`Rope::encode_qkv`): from a packed QKV projection,
//! Q rotated, K rotated and V copied into a KV cache in one dispatch, against the f64
//! reference (`reference::qkv_cache`): every position mode, GQA and MHA, contiguous caches in
//! BHSD and BSHD and paged caches by slot mapping (negative slots skipped, slots past the
//! cache flagged), each input dtype and each cache dtype, Q in place or into its own tensor.
//! Every buffer is poisoned around and between the views: an element written that should not
//! be, or one left unwritten, fails.
#![cfg(not(target_arch = "wasm32"))]

#[path = "fused/bind_groups.rs"]
mod bind_groups;
#[path = "fused/cache_entries.rs"]
mod cache_entries;
#[cfg(feature = "capture")]
#[path = "fused/captured.rs"]
mod captured;
#[path = "fused/cases.rs"]
mod cases;
mod common;
#[path = "fused/errors.rs"]
mod errors;

use common::{Elements, Rng, ctx, u32_buffer};
use wgpu_posenc::reference::{self, HostCacheIndex};
use wgpu_posenc::{
    ArrayView, CacheIndex, Dims, Dtype, Error, HostPositions, KvCache, Layout, NormWeight,
    Positions, QkNorm, QkvCall, RopeSpec, TensorView,
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
