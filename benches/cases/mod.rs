//! What the `throughput` example and the `throughput` bench time: each kernel over one
//! buffer of `S * 16 KiB` (a `[1, 32, S, 128]` f32 tensor, or a `[S, 4096]` table / `[1, S,
//! 4096]` embeddings: the same bytes), the roofline of that buffer (the identity shader and
//! `copy_buffer_to_buffer`), and the one-token decode step against an empty dispatch. The
//! fused QKV case reads the same buffer as a packed projection `[1, S, 24 + 2 * 4 heads,
//! 128]` and writes Q in place and K, V into caches `[1, S, 4, 128]`: the same bytes again.
//!
//! Shared by the two bench targets, `benches/throughput.rs` and `benches/criterion.rs`,
//! so the two time the same work.

mod axes;
mod decode;

#[allow(unused_imports, reason = "the criterion bench does not check results")]
pub use axes::{AxesModel, axes_position, axes_spec, mochi_table};
pub use decode::Decode;
use wgpu_posenc::Dims;
use wgpu_posenc::roofline::Roofline;
use wgpu_posenc::{
    ArrayView, CacheIndex, KvCache, Layout, NormWeight, PairLayout, PosEnc, Positions, QkNorm,
    QkvCall, Result, RopeCall, RopeSpec, Scaling, SincosGrid, SinusoidalSpec, TensorView,
};

/// Heads of the RoPE tensor.
pub const HEADS: u64 = 32;
/// Head dimension of the RoPE tensor.
pub const HEAD_DIM: u64 = 128;
/// Width of the sinusoidal rows: `HEADS * HEAD_DIM`, so every case covers the same bytes.
pub const D_MODEL: u64 = HEADS * HEAD_DIM;
/// KV heads of the decode step's K (grouped-query attention, as in LLaMA 3 8B).
pub const KV_HEADS: u64 = 8;
/// Q and KV heads of the fused QKV case: 24 + 2 * 4 = 32 heads, the bytes of every case.
pub const QKV_Q_HEADS: u64 = 24;
/// KV heads of the fused QKV case.
pub const QKV_KV_HEADS: u64 = 4;
/// Position of the decoded token.
pub const DECODE_POSITION: u32 = 4095;
/// `x * scale + PE` with this scale in the fused-add case: 1, so that values stay bounded
/// over many timed runs in place.
pub const ADD_SCALE: f32 = 1.0;

/// Where the heads of the RoPE tensor are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tensor {
    /// `[batch, heads, seq, dim]` in memory.
    Bhsd,
    /// `[batch, seq, heads, dim]` in memory.
    Bshd,
}

/// One timed case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// The in-place identity shader: the roofline.
    Identity,
    /// `copy_buffer_to_buffer` of the whole buffer into another.
    Copy,
    /// RoPE in place, default spec (base 10 000, whole head) with this pair layout.
    Rope(PairLayout, Tensor),
    /// The sinusoidal table `[S, 4096]` (interleaved), positions from 0.
    Table,
    /// The fused `x = x * scale + PE` over `[1, S, 4096]`.
    Add,
    /// diffusers' timestep projection `[S, 4096]` (`[cos | sin]`) at S f32 timesteps.
    Timesteps,
    /// The fused add of diffusers' 2-D sin-cos table (`[S / 64, 64]` patches, base size 64)
    /// over `[1, S, 4096]` patch embeddings: two passes, one per axis block.
    GridAdd,
    /// Packed QKV to Q rotated in place, K rotated and V copied into BSHD caches.
    Qkv(QkvPath),
    /// RoPE over three position axes, Q and K in one dispatch ([`axes`]).
    Axes(AxesModel),
}

/// How the QKV case does its work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QkvPath {
    /// One dispatch (`encode_qkv`).
    Fused,
    /// One dispatch with Qwen3's QK-norm, Q into its own tensor (the same bytes moved).
    FusedNorm,
    /// One dispatch with Qwen3's QK-norm, Q in place (its sums by subgroups where the
    /// adapter has them).
    FusedNormInPlace,
    /// The same with the sums through workgroup memory and a barrier
    /// (`PosEnc::with_subgroups(false)`).
    FusedNormBarrier,
    /// The unfused path of the same work: an RMSNorm pass over the Q and K heads in place
    /// (`benches/cases/rmsnorm.wgsl`), then the fused call without the norm.
    UnfusedNorm,
    /// Separate shader passes: RoPE on Q in place, RoPE on K into the K cache (out of
    /// place), and V into the V cache by an out-of-place pass of angle zero (an exact copy).
    Passes,
    /// RoPE on Q and K in place, then two `copy_buffer_to_buffer` of the K and V bytes as if
    /// contiguous: a lower bound of any unfused path.
    CopyBound,
}

impl Case {
    /// Every case, the roofline first.
    pub fn all() -> Vec<Case> {
        let mut all = vec![Case::Identity, Case::Copy];
        for pair in [PairLayout::HalfSplit, PairLayout::Interleaved] {
            for tensor in [Tensor::Bhsd, Tensor::Bshd] {
                all.push(Case::Rope(pair, tensor));
            }
        }
        all.push(Case::Table);
        all.push(Case::Add);
        all.push(Case::Timesteps);
        all.push(Case::GridAdd);
        all.push(Case::Axes(AxesModel::Flux));
        all.push(Case::Axes(AxesModel::Wan));
        all.push(Case::Axes(AxesModel::Flux2));
        all.push(Case::Axes(AxesModel::Mochi));
        for path in [
            QkvPath::Fused,
            QkvPath::FusedNorm,
            QkvPath::FusedNormInPlace,
            QkvPath::FusedNormBarrier,
            QkvPath::UnfusedNorm,
            QkvPath::Passes,
            QkvPath::CopyBound,
        ] {
            all.push(Case::Qkv(path));
        }
        all
    }

    /// The kernel's name in tables and JSON.
    pub fn kernel(self) -> &'static str {
        match self {
            Case::Identity => "identity",
            Case::Copy => "copy",
            Case::Rope(PairLayout::HalfSplit, _) => "rope-halfsplit",
            Case::Rope(PairLayout::Interleaved, _) => "rope-interleaved",
            Case::Table => "sinusoidal-table",
            Case::Add => "sinusoidal-add",
            Case::Timesteps => "timesteps",
            Case::GridAdd => "grid-2d-add",
            Case::Axes(AxesModel::Flux) => "rope-axes-flux-qk",
            Case::Axes(AxesModel::Wan) => "rope-axes-wan-qk",
            Case::Axes(AxesModel::Flux2) => "rope-axes-flux2-qk",
            Case::Axes(AxesModel::Mochi) => "rope-axes-mochi-qk",
            Case::Qkv(QkvPath::Fused) => "qkv-fused",
            Case::Qkv(QkvPath::FusedNorm) => "qkv-fused-norm",
            Case::Qkv(QkvPath::FusedNormInPlace) => "qkv-fused-norm-inplace",
            Case::Qkv(QkvPath::FusedNormBarrier) => "qkv-fused-norm-barrier",
            Case::Qkv(QkvPath::UnfusedNorm) => "qkv-unfused-norm",
            Case::Qkv(QkvPath::Passes) => "qkv-passes",
            Case::Qkv(QkvPath::CopyBound) => "qkv-copybound",
        }
    }

    /// The tensor layout's name in tables and JSON.
    pub fn layout(self) -> &'static str {
        match self {
            Case::Identity | Case::Copy => "flat",
            Case::Rope(_, Tensor::Bhsd) => "bhsd",
            Case::Rope(_, Tensor::Bshd) | Case::Qkv(_) | Case::Axes(_) => "bshd",
            Case::Table | Case::Timesteps => "rows",
            Case::Add | Case::GridAdd => "bsd",
        }
    }

    /// A short label: kernel and layout.
    pub fn label(self) -> String {
        format!("{} {}", self.kernel(), self.layout())
    }

    /// Bytes read plus bytes written over a buffer of `S` tokens: the table fill only
    /// writes, everything else reads and writes every byte (the QKV cases: the bytes the
    /// fused call must move, for both).
    pub fn moved(self, seq: u64) -> u64 {
        match self {
            Case::Table | Case::Timesteps => tensor_bytes(seq),
            _ => 2 * tensor_bytes(seq),
        }
    }

    /// Records the case over `buffers` (nothing is submitted).
    pub fn record(
        self,
        ctx: &PosEnc,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &Buffers,
    ) -> Result<()> {
        let seq = buffers.seq;
        let x = &buffers.x;
        match self {
            Case::Identity => buffers
                .roofline
                .encode_identity(encoder, x, 0, tensor_bytes(seq))
                .map(drop),
            Case::Copy => {
                let dst = buffers.copy_dst.as_ref().expect("buffers made for copy");
                encoder.copy_buffer_to_buffer(x, 0, dst, 0, tensor_bytes(seq));
                Ok(())
            }
            Case::Rope(pair, tensor) => ctx
                .encode_rope(
                    encoder,
                    &rope_spec(pair),
                    &TensorView::new(x, rope_layout(tensor, seq)),
                    Positions::Start(0),
                )
                .map(drop),
            Case::Table => ctx
                .encode_sinusoidal_table(
                    encoder,
                    &table_spec(),
                    &TensorView::new(x, Layout::rows(seq, D_MODEL)),
                    0,
                )
                .map(drop),
            Case::Add => ctx
                .encode_sinusoidal_add(
                    encoder,
                    &table_spec(),
                    &TensorView::new(x, Layout::bsd(1, seq, D_MODEL)),
                    Positions::Start(0),
                    ADD_SCALE,
                )
                .map(drop),
            Case::Timesteps => ctx
                .encode_sinusoidal_table_at(
                    encoder,
                    &timestep_spec(),
                    &TensorView::new(x, Layout::rows(seq, D_MODEL)),
                    Positions::Float(ArrayView::new(&buffers.timesteps)),
                )
                .map(drop),
            Case::GridAdd => ctx
                .encode_sincos_grid_add(
                    encoder,
                    &buffers.grid,
                    &TensorView::new(x, Layout::bsd(1, seq, D_MODEL)),
                    ADD_SCALE,
                )
                .map(drop),
            Case::Qkv(path) => record_qkv(ctx, encoder, buffers, path),
            Case::Axes(model) => {
                let layout = rope_layout(Tensor::Bshd, seq);
                let half = |first: u64| {
                    let mut l = layout;
                    l.offset = first * HEAD_DIM;
                    l.shape[1] = HEADS / 2;
                    TensorView::new(x, l)
                };
                let ids = &buffers.axes[model as usize];
                ctx.encode_rope_qk(
                    encoder,
                    &axes_spec(model),
                    &half(0),
                    &half(HEADS / 2),
                    Positions::Axes(ArrayView::new(ids)),
                )
                .map(drop)
            }
        }
    }
}

/// The QKV case by `path`.
fn record_qkv(
    ctx: &PosEnc,
    encoder: &mut wgpu::CommandEncoder,
    buffers: &Buffers,
    path: QkvPath,
) -> Result<()> {
    let seq = buffers.seq;
    let qkv = rope_layout(Tensor::Bshd, seq);
    let spec = rope_spec(PairLayout::HalfSplit);
    let [k_cache, v_cache] = &buffers.kv;
    let cache = Layout::bshd(Dims {
        batch: 1,
        heads: QKV_KV_HEADS,
        seq,
        head_dim: HEAD_DIM,
    });
    let part = |first: u64, heads: u64| {
        let mut l = qkv;
        l.offset = first * HEAD_DIM;
        l.shape[1] = heads;
        TensorView::new(&buffers.x, l)
    };
    let (q, k) = (part(0, QKV_Q_HEADS), part(QKV_Q_HEADS, QKV_KV_HEADS));
    if path == QkvPath::Passes {
        let v = part(QKV_Q_HEADS + QKV_KV_HEADS, QKV_KV_HEADS);
        ctx.encode_rope(encoder, &spec, &q, Positions::Start(0))?;
        let k_call =
            RopeCall::new(k, Positions::Start(0)).with_output(TensorView::new(k_cache, cache));
        ctx.encode_rope_call(encoder, &spec, &k_call)?;
        // No pair rotates (every frequency is zero): the pass copies V.
        let copy = RopeSpec::new().scaling(Scaling::Proportional {
            partial_rotary_factor: 1e-3,
            factor: 1.0,
        });
        let v_call =
            RopeCall::new(v, Positions::Start(0)).with_output(TensorView::new(v_cache, cache));
        return ctx.encode_rope_call(encoder, &copy, &v_call).map(drop);
    }
    if path == QkvPath::UnfusedNorm {
        buffers.rms_norm.encode(encoder);
    }
    if path != QkvPath::Passes && path != QkvPath::CopyBound {
        let kv = KvCache {
            k: TensorView::new(k_cache, cache),
            v: TensorView::new(v_cache, cache),
            index: CacheIndex::Position,
            overflow_flag: None,
        };
        let call = QkvCall::new(
            TensorView::new(&buffers.x, qkv),
            QKV_KV_HEADS,
            Positions::Start(0),
            kv,
        );
        let norm = unit_norm();
        if path == QkvPath::FusedNorm {
            let q_out = TensorView::new(&buffers.q_out, q_out_layout(seq));
            let call = call.with_q_out(q_out).with_qk_norm(&norm);
            return ctx.encode_qkv(encoder, &spec, &call).map(drop);
        }
        if path == QkvPath::FusedNormInPlace {
            return ctx
                .encode_qkv(encoder, &spec, &call.with_qk_norm(&norm))
                .map(drop);
        }
        if path == QkvPath::FusedNormBarrier {
            return buffers
                .barrier
                .encode_qkv(encoder, &spec, &call.with_qk_norm(&norm))
                .map(drop);
        }
        return ctx.encode_qkv(encoder, &spec, &call).map(drop);
    }
    ctx.encode_rope_qk(encoder, &spec, &q, &k, Positions::Start(0))?;
    let bytes = kv_bytes(seq);
    encoder.copy_buffer_to_buffer(&buffers.x, 0, k_cache, 0, bytes);
    encoder.copy_buffer_to_buffer(&buffers.x, bytes, v_cache, 0, bytes);
    Ok(())
}

/// The QK-norm's eps in the QKV case with QK-norm (its weights are ones).
pub const NORM_EPS: f32 = 1e-6;

/// Qwen3's QK-norm with unit weights over heads of [`HEAD_DIM`].
pub fn unit_norm() -> QkNorm {
    QkNorm {
        q_weight: vec![1.0; HEAD_DIM as usize],
        k_weight: vec![1.0; HEAD_DIM as usize],
        eps: NORM_EPS,
        weight: NormWeight::Scale,
    }
}

/// The unfused path's RMSNorm pass (`benches/cases/rmsnorm.wgsl`) over the Q and K heads
/// of the QKV case's buffer, built once: one dispatch per chunk of tokens that fits one
/// storage binding.
pub struct RmsNormPass {
    pipeline: wgpu::ComputePipeline,
    chunks: Vec<(wgpu::BindGroup, [u32; 2])>,
}

impl RmsNormPass {
    fn new(ctx: &PosEnc, x: &wgpu::Buffer, seq: u64) -> Self {
        use wgpu::util::DeviceExt;
        let device = ctx.device();
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("bench rmsnorm"),
            source: wgpu::ShaderSource::Wgsl(include_str!("rmsnorm.wgsl").into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("bench rmsnorm"),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let token_bytes = tensor_bytes(1);
        let per_chunk = (device.limits().max_storage_buffer_binding_size / token_bytes).max(1);
        let normed = QKV_Q_HEADS + QKV_KV_HEADS;
        let chunks = (0..seq)
            .step_by(per_chunk as usize)
            .map(|t0| {
                let tokens = per_chunk.min(seq - t0);
                let rows = (tokens * normed) as u32;
                let workgroups = rows.div_ceil(64);
                let y = workgroups.div_ceil(65_535).max(1);
                let grid = [workgroups.div_ceil(y), y];
                let params: [u32; 8] = [
                    rows,
                    grid[0],
                    (QKV_Q_HEADS + 2 * QKV_KV_HEADS) as u32,
                    normed as u32,
                    NORM_EPS.to_bits(),
                    0,
                    0,
                    0,
                ];
                let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("bench rmsnorm params"),
                    contents: bytemuck::cast_slice(&params),
                    usage: wgpu::BufferUsages::UNIFORM,
                });
                let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("bench rmsnorm"),
                    layout: &pipeline.get_bind_group_layout(0),
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: uniform.as_entire_binding(),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                buffer: x,
                                offset: t0 * token_bytes,
                                size: wgpu::BufferSize::new(tokens * token_bytes),
                            }),
                        },
                    ],
                });
                (group, grid)
            })
            .collect();
        Self { pipeline, chunks }
    }

    fn encode(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("bench rmsnorm"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&self.pipeline);
        for (group, grid) in &self.chunks {
            pass.set_bind_group(0, group, &[]);
            pass.dispatch_workgroups(grid[0], grid[1], 1);
        }
    }
}

/// Q out of the QKV case with QK-norm: `[1, S, 24, 128]` BSHD.
pub fn q_out_layout(seq: u64) -> Layout {
    Layout::bshd(Dims {
        batch: 1,
        heads: QKV_Q_HEADS,
        seq,
        head_dim: HEAD_DIM,
    })
}

/// Bytes of one KV cache of the QKV case.
pub fn kv_bytes(seq: u64) -> u64 {
    seq * QKV_KV_HEADS * HEAD_DIM * 4
}

/// Bytes of the buffer for `S` tokens.
pub fn tensor_bytes(seq: u64) -> u64 {
    seq * D_MODEL * 4
}

/// Whether the tensors of length `seq` fit one buffer of `ctx`'s device; says so on stderr
/// when they do not.
pub fn fits(ctx: &PosEnc, seq: u64) -> bool {
    let bytes = tensor_bytes(seq);
    let fits = bytes <= ctx.device().limits().max_buffer_size;
    if !fits {
        eprintln!(
            "S = {seq}: {} MiB is over the adapter's buffer size; skipped",
            bytes >> 20
        );
    }
    fits
}

/// The RoPE tensor `[1, 32, S, 128]` in `tensor`'s memory order.
pub fn rope_layout(tensor: Tensor, seq: u64) -> Layout {
    let shape = [1, HEADS, seq, HEAD_DIM];
    match tensor {
        Tensor::Bhsd => Layout::bhsd(shape),
        Tensor::Bshd => Layout::bshd(Dims::from_logical(shape)),
    }
}

/// The RoPE spec of the cases: the defaults with `pair` pairs.
pub fn rope_spec(pair: PairLayout) -> RopeSpec {
    RopeSpec::new().pair_layout(pair)
}

/// The sinusoidal spec of the cases: `d_model` 4096, interleaved, base 10 000.
pub fn table_spec() -> SinusoidalSpec {
    SinusoidalSpec::new(D_MODEL)
}

/// diffusers' `Timesteps(4096, flip_sin_to_cos=True, downscale_freq_shift=0)`.
pub fn timestep_spec() -> SinusoidalSpec {
    SinusoidalSpec::timesteps(D_MODEL, true, 0.0)
}

/// The timestep of row `s` of the timesteps case: fractional, up to `0.37 S`.
pub fn timestep(s: u64) -> f32 {
    s as f32 * 0.37
}

/// The 2-D grid of the grid case: `[S / 64, 64]` patches (`[S, 1]` where 64 does not divide
/// `S`), base size 64, interpolation scale 1.
pub fn grid(seq: u64) -> SincosGrid {
    let w = if seq.is_multiple_of(64) { 64 } else { 1 };
    SincosGrid::diffusers_2d(D_MODEL, [seq / w, w], 64.0, 1.0).expect("grid")
}

/// The buffer of `S` tokens (zeros), and a second one for the copy.
pub struct Buffers {
    /// Tokens.
    pub seq: u64,
    /// `STORAGE | COPY_SRC | COPY_DST`.
    pub x: wgpu::Buffer,
    /// `COPY_DST`, where the copy case writes.
    pub copy_dst: Option<wgpu::Buffer>,
    /// The identity shader of the device.
    pub roofline: Roofline,
    /// The K and V caches of the QKV case, `[1, S, 4, 128]` f32.
    pub kv: [wgpu::Buffer; 2],
    /// Q out of the QKV case with QK-norm, `[1, S, 24, 128]` f32.
    pub q_out: wgpu::Buffer,
    /// The unfused path's RMSNorm pass over `x`.
    pub rms_norm: RmsNormPass,
    /// The context with subgroups off (the QK-norm's barrier sum).
    pub barrier: PosEnc,
    /// The timesteps case's S f32 positions.
    pub timesteps: wgpu::Buffer,
    /// The grid case's grid.
    pub grid: SincosGrid,
    /// The axes cases' positions `[3 or 4, S]`: FLUX's, Wan's, FLUX.2's.
    pub axes: [wgpu::Buffer; 4],
}

impl Buffers {
    /// Allocates the buffers for `S` tokens; `copy` adds the copy's destination.
    pub fn new(ctx: &PosEnc, seq: u64, copy: bool) -> Self {
        let device = ctx.device();
        let size = tensor_bytes(seq);
        let buffer = |label, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            })
        };
        let x = buffer(
            "throughput x",
            wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
        );
        let timesteps: Vec<f32> = (0..seq).map(timestep).collect();
        Self {
            seq,
            timesteps: wgpu::util::DeviceExt::create_buffer_init(
                device,
                &wgpu::util::BufferInitDescriptor {
                    label: Some("throughput timesteps"),
                    contents: bytemuck::cast_slice(&timesteps),
                    usage: wgpu::BufferUsages::STORAGE,
                },
            ),
            grid: grid(seq),
            axes: [
                AxesModel::Flux,
                AxesModel::Wan,
                AxesModel::Flux2,
                AxesModel::Mochi,
            ]
            .map(|model| {
                wgpu::util::DeviceExt::create_buffer_init(
                    device,
                    &wgpu::util::BufferInitDescriptor {
                        label: Some("throughput axes"),
                        contents: bytemuck::cast_slice(&axes::axes_positions(model, seq)),
                        usage: wgpu::BufferUsages::STORAGE,
                    },
                )
            }),
            barrier: ctx.clone().with_subgroups(false),
            rms_norm: RmsNormPass::new(ctx, &x, seq),
            x,
            copy_dst: copy.then(|| buffer("throughput copy", wgpu::BufferUsages::COPY_DST)),
            roofline: Roofline::new(ctx),
            q_out: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("throughput Q out"),
                size: seq * QKV_Q_HEADS * HEAD_DIM * 4,
                // Read back by the check.
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
            kv: ["throughput K cache", "throughput V cache"].map(|label| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: kv_bytes(seq),
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            }),
        }
    }
}

/// The fused call's decode step with Qwen3-8B's shapes: one token of a packed
/// `[1, 1, 32 + 2 * 8, 128]` projection at [`DECODE_POSITION`], Q in place, K and V into
/// caches `[1, 8, 4096, 128]`, with or without Qwen3's QK-norm.
pub struct QkvDecode {
    qkv: wgpu::Buffer,
    kv: [wgpu::Buffer; 2],
    norm: QkNorm,
}

/// Q heads of Qwen3-8B.
pub const DECODE_Q_HEADS: u64 = 32;
/// KV heads of Qwen3-8B.
pub const DECODE_KV_HEADS: u64 = 8;
/// Positions the decode step's caches hold.
const DECODE_CACHE: u64 = 4096;

impl QkvDecode {
    /// Allocates the token and the caches.
    pub fn new(ctx: &PosEnc) -> Self {
        let buffer = |bytes: u64| {
            ctx.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("throughput qkv decode"),
                size: bytes,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let cache = DECODE_KV_HEADS * DECODE_CACHE * HEAD_DIM * 4;
        Self {
            qkv: buffer((DECODE_Q_HEADS + 2 * DECODE_KV_HEADS) * HEAD_DIM * 4),
            kv: [buffer(cache), buffer(cache)],
            norm: unit_norm(),
        }
    }

    /// Bytes read plus written by one step: the token's Q, K and V, read and written.
    pub fn moved() -> u64 {
        2 * (DECODE_Q_HEADS + 2 * DECODE_KV_HEADS) * HEAD_DIM * 4
    }

    /// Records the step, with QK-norm or without.
    pub fn record(
        &self,
        ctx: &PosEnc,
        encoder: &mut wgpu::CommandEncoder,
        norm: bool,
    ) -> Result<()> {
        let heads = DECODE_Q_HEADS + 2 * DECODE_KV_HEADS;
        let qkv = Layout::bshd(Dims {
            batch: 1,
            heads,
            seq: 1,
            head_dim: HEAD_DIM,
        });
        let cache = Layout::bhsd([1, DECODE_KV_HEADS, DECODE_CACHE, HEAD_DIM]);
        let call = QkvCall::new(
            TensorView::new(&self.qkv, qkv),
            DECODE_KV_HEADS,
            Positions::Start(DECODE_POSITION),
            KvCache {
                k: TensorView::new(&self.kv[0], cache),
                v: TensorView::new(&self.kv[1], cache),
                index: CacheIndex::Position,
                overflow_flag: None,
            },
        );
        let call = if norm {
            call.with_qk_norm(&self.norm)
        } else {
            call
        };
        ctx.encode_qkv(encoder, &RopeSpec::new(), &call).map(drop)
    }
}

/// Encodes with `record`, submits, and waits for the queue to be idle: one iteration of a
/// wall-time measurement.
pub fn submit_and_wait(
    ctx: &PosEnc,
    record: impl FnOnce(&mut wgpu::CommandEncoder) -> Result<()>,
) -> Result<()> {
    let mut encoder = ctx
        .device()
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("throughput"),
        });
    record(&mut encoder)?;
    ctx.queue().submit([encoder.finish()]);
    ctx.device()
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(wgpu_posenc::Error::from)?;
    Ok(())
}
