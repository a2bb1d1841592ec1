//! The context users hold, and everything it can do: the one public front over the pair
//! passes (`kernels`), the host-slice conveniences (`host`) and the device's caches.

use crate::error::{Error, Result};
use crate::grid::SincosGrid;
use crate::kernels::device::{CacheUsage, Passes};
use crate::kernels::fused::QkvCall;
use crate::kernels::pass::EncodeReport;
use crate::kernels::rope::{Rope, RopeCall};
use crate::kernels::sinusoidal::SinusoidalOp;
use crate::position_grid::PositionGrid;
use crate::positions::{HostPositions, Positions};
use crate::sinusoid::SinusoidalSpec;
use crate::spec::RopeSpec;
use crate::tensor::{ArrayView, Layout, TensorView};

/// The entry point: holds a device and queue (the caller's, or one it picked), and compiles
/// each kernel specialization once.
///
/// `encode_*` methods record into a caller's command encoder and never submit; `*_host`
/// methods upload host slices, run, and read back. Clones share the caches.
///
/// Every method that waits for the GPU has an async form (`*_async`) that works everywhere,
/// the browser included; the blocking forms (`with_default_adapter`, `*_host`,
/// `read_buffer`) are those under `pollster::block_on` and exist on native targets only.
/// On the web, a device error about a buffer or pipeline an `encode_*` call made (which
/// native reports from that call) is reported by the next async method, or by
/// [`PosEnc::check_device`].
#[derive(Clone, Debug)]
pub struct PosEnc {
    passes: Passes,
}

/// Construction and the device.
impl PosEnc {
    /// Wraps the caller's device and queue. Nothing is compiled until first use.
    ///
    /// The device must have the limits the kernels need (WebGPU's default limits are
    /// enough; [`wgpu::Limits::downlevel_defaults`] is not: it allows 4 storage buffers per
    /// stage, the kernels bind 8): an [`Error::DeviceLimit`] names the one that is short.
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Result<Self> {
        Ok(Self {
            passes: Passes::new(device, queue)?,
        })
    }

    /// Picks an adapter the wgpu way (`WGPU_BACKEND`, `WGPU_ADAPTER_NAME`,
    /// `WGPU_POWER_PREF`), and requests a device with the limits the kernels can use (the
    /// adapter's own storage-binding and buffer sizes, not the 128 MiB default) and
    /// `SHADER_F16` / `TIMESTAMP_QUERY` / `SUBGROUP` where the adapter has them.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn with_default_adapter() -> Result<Self> {
        pollster::block_on(Self::with_default_adapter_async())
    }

    /// The async form of `PosEnc::with_default_adapter`, and the constructor on the web:
    /// there the adapter is the browser's WebGPU (`navigator.gpu`), and the environment
    /// variables are absent.
    pub async fn with_default_adapter_async() -> Result<Self> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::all());
        let adapter = match std::env::var("WGPU_ADAPTER_NAME") {
            Ok(name) if !name.is_empty() => {
                let adapters = instance.enumerate_adapters(backends).await;
                let wanted = name.to_lowercase();
                let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
                adapters
                    .into_iter()
                    .find(|a| a.get_info().name.to_lowercase().contains(&wanted))
                    .ok_or(Error::AdapterNotFound {
                        name,
                        available: names,
                    })?
            }
            _ => instance
                .request_adapter(&wgpu::RequestAdapterOptions {
                    power_preference: wgpu::PowerPreference::from_env().unwrap_or_default(),
                    compatible_surface: None,
                    ..Default::default()
                })
                .await
                .map_err(|_| no_adapter())?,
        };
        let (device, queue) = Self::request_device(&adapter).await?;
        let mut passes = Passes::new(&device, &queue)?;
        passes.adapter = Some(adapter.get_info());
        Ok(Self { passes })
    }

    /// Requests a device from `adapter` with the limits and optional features the kernels
    /// use (see [`PosEnc::with_default_adapter`]).
    pub async fn request_device(adapter: &wgpu::Adapter) -> Result<(wgpu::Device, wgpu::Queue)> {
        // All the adapter offers: the default limits cap a binding at 128 MiB.
        let limits = adapter.limits();
        let features = adapter.features()
            & (wgpu::Features::SHADER_F16
                | wgpu::Features::TIMESTAMP_QUERY
                | wgpu::Features::SUBGROUP);
        Ok(adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("wgpu-posenc"),
                required_features: features,
                required_limits: limits,
                ..Default::default()
            })
            .await?)
    }

    /// Caps the bytes one storage binding may cover below the device's limit. Larger
    /// tensors are split into more dispatches; the result is the same. Useful to share a
    /// binding budget, and to exercise the splitting on an adapter with large bindings.
    pub fn with_max_binding_size(self, bytes: u64) -> Self {
        Self {
            passes: self.passes.with_max_binding_size(bytes),
        }
    }

    /// Whether kernels may use subgroup operations (default: yes, where the device has
    /// `wgpu::Features::SUBGROUP`). Today that is the fused QKV call's QK-norm, which adds a
    /// head's sums of squares by subgroup shuffles where the adapter's smallest subgroup
    /// holds a token's invocations, and through workgroup memory with a barrier otherwise
    /// (or with `false`). Both sum in a fixed order; they round differently, so results
    /// may differ in the last bit between the two.
    pub fn with_subgroups(self, on: bool) -> Self {
        Self {
            passes: self.passes.with_subgroups(on),
        }
    }

    /// Raises the alignment of binding window offsets above the device's
    /// `min_storage_buffer_offset_alignment` (to a power of two, at most 2^16 bytes), e.g. to
    /// WebGPU's default of 256 so that every dispatch is also valid on a browser's adapter
    /// (the capture check in `tests/dawn.rs` does). Results are the same.
    pub fn with_storage_offset_alignment(self, bytes: u64) -> Self {
        Self {
            passes: self.passes.with_storage_offset_alignment(bytes),
        }
    }

    /// Records every pass this context dispatches into `capture` from now on (and the
    /// contents of the buffers it creates), so that the dispatches can be replayed elsewhere.
    #[cfg(feature = "capture")]
    pub fn with_capture(self, capture: &crate::kernels::capture::Capture) -> Self {
        Self {
            passes: self.passes.with_capture(capture),
        }
    }

    /// The device.
    pub fn device(&self) -> &wgpu::Device {
        &self.passes.device
    }

    /// The queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.passes.queue
    }

    /// Whether this device can run a tensor of `dtype`: [`Error::MissingFeature`] for f16
    /// where the device has no `SHADER_F16` (bf16 and f32 run everywhere). Every call checks
    /// it; a caller that runs a call later (a deferred graph) checks it up front with this.
    pub fn check_dtype(&self, dtype: crate::spec::Dtype) -> Result<()> {
        self.passes.check_dtype(dtype)
    }

    /// The contents of `buffer` (which needs `COPY_SRC`) once everything submitted before
    /// has run: copied to a staging buffer, submitted, waited for and mapped.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_buffer(&self, buffer: &wgpu::Buffer) -> Result<Vec<u8>> {
        pollster::block_on(self.read_buffer_async(buffer))
    }

    /// The async form of `PosEnc::read_buffer`.
    pub async fn read_buffer_async(&self, buffer: &wgpu::Buffer) -> Result<Vec<u8>> {
        self.passes.read_buffer(buffer).await
    }

    /// The device's verdict on every buffer and pipeline this context made since the last
    /// check: the first validation or out-of-memory error as [`Error::Device`] (after which
    /// the context's caches, compiled pipelines included, are dropped).
    ///
    /// Native targets check each object as it is made, and this returns `Ok` at once. On the
    /// web that check resolves only when the page's event loop turns, so a synchronous
    /// `encode_*` call cannot return it; the async host methods call this before reading back.
    pub async fn check_device(&self) -> Result<()> {
        self.passes.settle().await
    }

    /// Waits until the work submitted to the queue so far has run (native: `device.poll`;
    /// the web: the queue's `onSubmittedWorkDone`), then as [`PosEnc::check_device`].
    pub async fn wait_idle(&self) -> Result<()> {
        self.passes.wait_idle().await
    }

    /// The adapter, when this context picked it.
    pub fn adapter_info(&self) -> Option<&wgpu::AdapterInfo> {
        self.passes.adapter.as_ref()
    }

    /// The pair passes' state (for the roofline tool, which binds the same way).
    #[cfg(feature = "roofline")]
    pub(crate) fn passes(&self) -> &Passes {
        &self.passes
    }

    /// Drops every cached frequency buffer and bind group (compiled pipelines stay): after
    /// this, the context holds none of the caller's buffers.
    pub fn clear_caches(&self) {
        self.passes.clear_caches();
    }

    /// What the caches hold now (see [`CacheUsage`] for their bounds).
    pub fn cache_usage(&self) -> CacheUsage {
        self.passes.cache_usage()
    }
}

/// Why no adapter came: natively, which backend was asked for; in a browser, that the page
/// has no WebGPU.
fn no_adapter() -> Error {
    if cfg!(target_arch = "wasm32") {
        Error::NoWebGpu
    } else {
        Error::NoAdapter {
            backend: std::env::var("WGPU_BACKEND").unwrap_or_else(|_| "unset".into()),
        }
    }
}

/// RoPE.
impl PosEnc {
    /// Validates `spec` for tensors of `head_dim` and computes its frequencies: the prepared
    /// form of RoPE, for many calls (see [`Rope`]).
    pub fn rope(&self, spec: &RopeSpec, head_dim: u64) -> Result<Rope> {
        self.passes.rope(spec, head_dim)
    }

    /// Records RoPE in place over `tensor` into `encoder` (nothing is submitted).
    ///
    /// Every pair of the first `r` elements of each `(batch, head, token)` row is rotated by
    /// `position * f_j`; elements `[r, head_dim)` and everything outside the view are left
    /// as they are.
    pub fn encode_rope(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &RopeSpec,
        tensor: &TensorView<'_>,
        positions: Positions<ArrayView<'_>>,
    ) -> Result<EncodeReport> {
        self.encode_rope_call(encoder, spec, &RopeCall::new(*tensor, positions))
    }

    /// Records RoPE in place over Q and K in one dispatch: each angle is computed once per
    /// (token, pair) and applied to every Q and K head. K may have fewer heads (GQA).
    pub fn encode_rope_qk(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &RopeSpec,
        q: &TensorView<'_>,
        k: &TensorView<'_>,
        positions: Positions<ArrayView<'_>>,
    ) -> Result<EncodeReport> {
        self.encode_rope_call(encoder, spec, &RopeCall::new(*q, positions).with_k(*k))
    }

    /// Records the RoPE call `call` (see [`RopeCall`] for its options).
    pub fn encode_rope_call(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &RopeSpec,
        call: &RopeCall<'_>,
    ) -> Result<EncodeReport> {
        self.passes.encode_rope_call(encoder, spec, call)
    }

    /// Records the fused attention preprocessing `call` (see [`QkvCall`]): from the packed
    /// projection output, Q rotated (in place or into `q_out`), K rotated and V copied into
    /// the KV cache at each token's position or slot, in one dispatch.
    pub fn encode_qkv(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &RopeSpec,
        call: &QkvCall<'_>,
    ) -> Result<EncodeReport> {
        self.rope(spec, call.qkv.layout.shape[3])?
            .encode_qkv(encoder, call)
    }

    /// RoPE in place over `data`, laid out as `layout` says (f32). Blocks until done.
    /// Length-dependent scalings see HF's `max(position) + 1` of the host positions.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn rope_host(
        &self,
        spec: &RopeSpec,
        layout: Layout,
        data: &mut [f32],
        positions: HostPositions<'_>,
    ) -> Result<()> {
        pollster::block_on(self.rope_host_async(spec, layout, data, positions))
    }

    /// The async form of `PosEnc::rope_host`: uploads, encodes, submits, awaits the
    /// mapping and reads back without blocking.
    pub async fn rope_host_async(
        &self,
        spec: &RopeSpec,
        layout: Layout,
        data: &mut [f32],
        positions: HostPositions<'_>,
    ) -> Result<()> {
        // HF's rule for length-dependent scalings, from the positions the host holds.
        let mut spec = spec.clone();
        if spec.scaling.needs_seq_len() && spec.scaling_seq_len.is_none() {
            positions.check_lengths(layout.shape[0], layout.shape[2])?;
            let axes = spec.position_planes();
            spec.scaling_seq_len = Some(positions.seq_len(&layout, axes));
        }
        self.passes
            .in_place_at_positions(layout, data, positions, |passes, encoder, x, positions| {
                let call = RopeCall::new(x, positions);
                passes.encode_rope_call(encoder, &spec, &call).map(drop)
            })
            .await
    }
}

/// The sinusoidal encoding.
impl PosEnc {
    /// Records the sinusoidal table into `table` (rows of `d_model`, e.g. [`Layout::rows`]):
    /// row `s` gets the encoding of position `start + s`. Every (batch, head) copy of the view
    /// gets the same rows.
    pub fn encode_sinusoidal_table(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &SinusoidalSpec,
        table: &TensorView<'_>,
        start: u32,
    ) -> Result<EncodeReport> {
        self.encode_sinusoidal_table_at(encoder, spec, table, Positions::Start(start))
    }

    /// Records the sinusoidal table into `table` at any positions: row `s` of batch row `b`
    /// (in every head) gets the encoding of token `(b, s)`'s position. With
    /// [`Positions::Float`] and a `[1, 1, n, dim]` table (e.g. [`Layout::rows`]) it is
    /// diffusers' timestep projection of `n` timesteps ([`SinusoidalSpec::timesteps`]).
    pub fn encode_sinusoidal_table_at(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &SinusoidalSpec,
        table: &TensorView<'_>,
        positions: Positions<ArrayView<'_>>,
    ) -> Result<EncodeReport> {
        let op = SinusoidalOp::Table { positions };
        self.passes.encode_sinusoidal(encoder, spec, table, op)
    }

    /// Records the fused `x = x * scale + PE` over embeddings `x` (e.g. [`Layout::bsd`]) at
    /// `positions` (a start, per-row starts, or ids; fairseq maps padding tokens to its
    /// padding index). The original Transformer uses `scale = sqrt(d_model)`.
    pub fn encode_sinusoidal_add(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &SinusoidalSpec,
        x: &TensorView<'_>,
        positions: Positions<ArrayView<'_>>,
        scale: f32,
    ) -> Result<EncodeReport> {
        let op = SinusoidalOp::Add { positions, scale };
        self.passes.encode_sinusoidal(encoder, spec, x, op)
    }

    /// The sinusoidal table `[seq, d_model]` for positions `start..start + seq`.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn sinusoidal_table_host(
        &self,
        spec: &SinusoidalSpec,
        seq: u64,
        start: u32,
    ) -> Result<Vec<f32>> {
        pollster::block_on(self.sinusoidal_table_host_async(spec, seq, start))
    }

    /// The async form of `PosEnc::sinusoidal_table_host`.
    pub async fn sinusoidal_table_host_async(
        &self,
        spec: &SinusoidalSpec,
        seq: u64,
        start: u32,
    ) -> Result<Vec<f32>> {
        spec.validate()?;
        let layout = Layout::rows(seq, spec.d_model);
        self.passes
            .fill_new("the sinusoidal table", layout, |passes, encoder, table| {
                let op = SinusoidalOp::Table {
                    positions: Positions::Start(start),
                };
                passes
                    .encode_sinusoidal(encoder, spec, &table, op)
                    .map(drop)
            })
            .await
    }

    /// The sinusoidal table in a new tensor of `layout` at host positions (u32 or f32):
    /// row `s` of batch row `b`, in every head, gets the encoding of token `(b, s)`'s
    /// position. Timestep embeddings of diffusers' `Timesteps`:
    /// `sinusoidal_table_at_host(&SinusoidalSpec::timesteps(256, true, 0.0),
    /// Layout::rows(t.len() as u64, 256), HostPositions::float(&t))`.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn sinusoidal_table_at_host(
        &self,
        spec: &SinusoidalSpec,
        layout: Layout,
        positions: HostPositions<'_>,
    ) -> Result<Vec<f32>> {
        pollster::block_on(self.sinusoidal_table_at_host_async(spec, layout, positions))
    }

    /// The async form of `PosEnc::sinusoidal_table_at_host`.
    pub async fn sinusoidal_table_at_host_async(
        &self,
        spec: &SinusoidalSpec,
        layout: Layout,
        positions: HostPositions<'_>,
    ) -> Result<Vec<f32>> {
        spec.validate()?;
        self.passes
            .fill_new_at_positions(
                "the sinusoidal table",
                layout,
                positions,
                |passes, encoder, table, positions| {
                    let op = SinusoidalOp::Table { positions };
                    passes
                        .encode_sinusoidal(encoder, spec, &table, op)
                        .map(drop)
                },
            )
            .await
    }

    /// Records a multi-axis sin-cos table ([`SincosGrid`]: diffusers' 2-D and 3-D tables)
    /// into `table`, `[batch, heads, grid.rows(), grid.dim]` (e.g. [`Layout::rows`]); every
    /// (batch, head) copy gets the same rows. One pass per block, plus one for the zero
    /// rows; the coordinates are uploaded into buffers of the call.
    pub fn encode_sincos_grid(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        grid: &SincosGrid,
        table: &TensorView<'_>,
    ) -> Result<EncodeReport> {
        self.passes.encode_sincos_grid(encoder, grid, table, None)
    }

    /// Records `x = x * scale + PE` of a [`SincosGrid`] over patch embeddings `x`, `[batch,
    /// heads, grid.rows(), grid.dim]` (e.g. [`Layout::bsd`]): the zero rows are scaled only.
    pub fn encode_sincos_grid_add(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        grid: &SincosGrid,
        x: &TensorView<'_>,
        scale: f32,
    ) -> Result<EncodeReport> {
        self.passes
            .encode_sincos_grid(encoder, grid, x, Some(scale))
    }

    /// The table of a [`SincosGrid`], `[grid.rows(), grid.dim]`.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn sincos_grid_host(&self, grid: &SincosGrid) -> Result<Vec<f32>> {
        pollster::block_on(self.sincos_grid_host_async(grid))
    }

    /// The async form of `PosEnc::sincos_grid_host`.
    pub async fn sincos_grid_host_async(&self, grid: &SincosGrid) -> Result<Vec<f32>> {
        grid.validate()?;
        let layout = Layout::rows(grid.rows(), grid.dim);
        self.passes
            .fill_new("the sin-cos grid", layout, |passes, encoder, table| {
                passes
                    .encode_sincos_grid(encoder, grid, &table, None)
                    .map(drop)
            })
            .await
    }

    /// Records the positions of a [`PositionGrid`] (FLUX's ids, a video's `(t, h, w)`,
    /// Qwen-Image's centered grid, merge blocks, ...) for `batch` rows into `out`:
    /// `[grid.axes, batch, grid.tokens()]` f32 values (their bits), every row the same, the
    /// array of [`Positions::FloatAxes`] (3 or 4 axes) or [`Positions::Float`] (1 axis) for
    /// a RoPE call recorded after it. One dispatch; the grid's description (40 words a
    /// segment) goes into a buffer of the call. `out` needs `STORAGE` usage and room for the
    /// values from its offset; a bad grid is an [`Error::InvalidPositionGrid`].
    pub fn encode_position_grid(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        grid: &PositionGrid,
        batch: u64,
        out: ArrayView<'_>,
    ) -> Result<EncodeReport> {
        self.passes.encode_position_grid(encoder, grid, batch, out)
    }

    /// The positions of a [`PositionGrid`] as the GPU computes them, `[axes, batch,
    /// tokens]`, read back (the same values as [`PositionGrid::positions`]).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn position_grid_host(&self, grid: &PositionGrid, batch: u64) -> Result<Vec<f32>> {
        pollster::block_on(self.position_grid_host_async(grid, batch))
    }

    /// The async form of `PosEnc::position_grid_host`.
    pub async fn position_grid_host_async(
        &self,
        grid: &PositionGrid,
        batch: u64,
    ) -> Result<Vec<f32>> {
        grid.validate()?;
        let values = grid
            .tokens()
            .saturating_mul(batch)
            .saturating_mul(grid.axes as u64);
        if values == 0 {
            return Ok(Vec::new());
        }
        let layout = Layout::rows(1, values);
        self.passes
            .fill_new("the position grid", layout, |passes, encoder, table| {
                let out = ArrayView::at(table.buffer, table.layout.offset * 4);
                passes
                    .encode_position_grid(encoder, grid, batch, out)
                    .map(drop)
            })
            .await
    }

    /// `x = x * scale + PE` in place over embeddings laid out as `layout` says.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn sinusoidal_add_host(
        &self,
        spec: &SinusoidalSpec,
        layout: Layout,
        data: &mut [f32],
        positions: HostPositions<'_>,
        scale: f32,
    ) -> Result<()> {
        pollster::block_on(self.sinusoidal_add_host_async(spec, layout, data, positions, scale))
    }

    /// The async form of `PosEnc::sinusoidal_add_host`.
    pub async fn sinusoidal_add_host_async(
        &self,
        spec: &SinusoidalSpec,
        layout: Layout,
        data: &mut [f32],
        positions: HostPositions<'_>,
        scale: f32,
    ) -> Result<()> {
        self.passes
            .in_place_at_positions(layout, data, positions, |passes, encoder, x, positions| {
                let op = SinusoidalOp::Add { positions, scale };
                passes.encode_sinusoidal(encoder, spec, &x, op).map(drop)
            })
            .await
    }
}
