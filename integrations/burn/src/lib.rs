//! [wgpu-posenc](wgpu_posenc)'s kernels on burn's tensors: RoPE in place, Q and K in one
//! dispatch, the fused QKV call (QK-norm, RoPE, KV-cache write) and the sinusoidal table, on
//! burn's own wgpu device and queue, with no copy of the data.
//!
//! ```no_run
//! use burn::tensor::{Distribution, Tensor};
//! use wgpu_posenc::{Positions, RopeSpec};
//! use wgpu_posenc_burn::BurnPosEnc;
//!
//! # fn main() -> Result<(), wgpu_posenc_burn::Error> {
//! // burn's wgpu runtime, and the kernels on its device and queue.
//! let posenc = BurnPosEnc::init()?;
//! let device = posenc.device().clone();
//! let q = Tensor::<4>::random([1, 32, 4096, 128], Distribution::Default, &device);
//! // Instead of burn::nn::RotaryEncoding::forward(q): exact angles, in place.
//! let rope = posenc.rope(&RopeSpec::new().base(500_000.0), 128)?;
//! let q = posenc.apply(&rope, q, Positions::Start(0))?;
//! let scores = q.clone().matmul(q.swap_dims(2, 3)); // burn's next op sees the rotation
//! # Ok(()) }
//! ```
//!
//! # What the bridge needs of a tensor
//!
//! - **burn 0.22.1's CubeCL backend on wgpu, without fusion** (`burn` with
//!   `default-features = false, features = ["std", "wgpu"]`). burn's default features turn
//!   kernel fusion on, which changes what burn's `Cube` backend is (a fused tensor is a node of
//!   a lazy graph, not a buffer): with burn's `fusion` feature on anywhere in the build, this
//!   crate does not compile. A tensor of another backend or runtime is [`Error::NotWgpu`]; a
//!   tensor of another device, [`Error::OtherDevice`].
//! - f32, f16 or bf16 (f16 where the adapter has `SHADER_F16`); positions i32 or u32.
//! - Rank 4, `[batch, heads, seq, head_dim]` in any order in memory (BHSD, BSHD after a
//!   `swap_dims(1, 2)`, a slice of a packed projection), each row contiguous. Such a view is
//!   bound where it lies: the tensor's own wgpu buffer (CubeCL pools many tensors in one) at its
//!   offset and strides, and nothing outside it changes. A view it cannot bind (a row with a
//!   stride, a broadcast axis, a storage tiling) is [`Error::Layout`]: make it contiguous in burn
//!   first, e.g. with `x.reshape(x.dims())`, if that is what is wanted.
//! - A tensor is rewritten in place when it alone holds its buffer. When a clone shares it
//!   (burn tensors are values), the result goes into a new tensor in the same single pass and
//!   the clone keeps its values, as burn's own operations do. A KV cache is always written in
//!   place, so a shared one is [`Error::Shared`].
//!
//! # Ordering
//!
//! Before each dispatch the bridge submits burn's queued work on the calling thread's stream
//! (CubeCL batches its kernels into a command buffer of its own), then submits its own
//! commands on the same queue; burn's later work is submitted after them and sees the
//! result. No sync is needed, and none is made: nothing waits for the GPU.
#![warn(missing_docs)]

use burn::backend::wgpu::wgpu;
use burn::backend::wgpu::{CubeTensor, WgpuSetup};
use burn::backend::{Cube, TensorMetadata};
use burn::cubecl::wgpu::{AutoCompiler, WgpuServer};
use burn::tensor::kind::Basic;
use burn::tensor::{BackendPrimitive, DType, Device, Int, Tensor};
use wgpu_posenc::{
    ArrayView, CacheIndex, Dtype, KvCache, Layout, PosEnc, Positions, QkNorm, QkvCall, Rope,
    RopeCall, RopeSpec, SinusoidalSpec, TensorView,
};

pub use burn;
pub use wgpu_posenc;

/// What went wrong, and how to fix it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The kernels refused the call.
    #[error(transparent)]
    PosEnc(#[from] wgpu_posenc::Error),
    /// The tensor is not one of burn's CubeCL backend on wgpu, or CubeCL refused its buffer.
    #[error(
        "{what} is not a tensor of burn's wgpu backend, or its buffer cannot be had ({detail}): \
         create it on BurnPosEnc::device()"
    )]
    NotWgpu {
        /// Which argument.
        what: &'static str,
        /// burn's or CubeCL's words.
        detail: String,
    },
    /// The tensor lives on another device than the bridge's.
    #[error("{what} lives on {found}, the bridge on {ours}: move it with Tensor::to_device")]
    OtherDevice {
        /// Which argument.
        what: &'static str,
        /// The tensor's device.
        found: String,
        /// The bridge's.
        ours: String,
    },
    /// The tensor's element type is not one the kernels take.
    #[error("{what} has dtype {dtype:?}; {expected}")]
    Dtype {
        /// Which argument.
        what: &'static str,
        /// Its dtype.
        dtype: DType,
        /// What is taken.
        expected: &'static str,
    },
    /// The tensor's memory layout cannot be bound as a view.
    #[error(
        "{what} (shape {shape:?}, strides {strides:?}) cannot be bound where it lies: {why}; make \
         a contiguous copy in burn first (e.g. x.reshape(x.dims())) if that is what you want"
    )]
    Layout {
        /// Which argument.
        what: &'static str,
        /// Its shape.
        shape: Vec<usize>,
        /// Its strides, in elements.
        strides: Vec<usize>,
        /// What is wrong.
        why: &'static str,
    },
    /// A tensor that must be written in place shares its buffer with another tensor.
    #[error(
        "{what} shares its buffer with another tensor (a clone): it is written in place, so drop \
         the other handle first"
    )]
    Shared {
        /// Which argument.
        what: &'static str,
    },
    /// burn's runtime failed to set up or to hand over a buffer.
    #[error("burn's wgpu runtime: {0}")]
    Runtime(String),
}

/// The bridge's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The kernels on burn's wgpu device: one [`PosEnc`] on the same `wgpu::Device` and
/// `wgpu::Queue` as burn's runtime. Cheap to clone.
#[derive(Clone, Debug)]
pub struct BurnPosEnc {
    posenc: PosEnc,
    device: Device,
    /// Where position arrays are copied before a dispatch (see `BurnPosEnc::positions`).
    scratch: std::sync::Arc<std::sync::Mutex<Option<wgpu::Buffer>>>,
}

/// A tensor's buffer as the bridge binds it: CubeCL's guard keeps the allocation from being
/// freed, handed out again or moved while it is held.
struct Bound {
    _guard: Box<dyn std::any::Any>,
    buffer: wgpu::Buffer,
    layout: Layout,
    dtype: Dtype,
}

impl BurnPosEnc {
    /// Picks an adapter the wgpu way (`WGPU_BACKEND`, `WGPU_ADAPTER_NAME`,
    /// `WGPU_POWER_PREF`, as [`PosEnc::with_default_adapter`] does), requests a device with
    /// the adapter's limits and the features both the kernels and burn's kernels use, and
    /// shares it with burn ([`BurnPosEnc::from_setup`]).
    pub fn init() -> Result<Self> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let backends = wgpu::Backends::from_env().unwrap_or_default();
        let adapter = match std::env::var("WGPU_ADAPTER_NAME") {
            Ok(name) if !name.is_empty() => {
                let wanted = name.to_lowercase();
                pollster::block_on(instance.enumerate_adapters(backends))
                    .into_iter()
                    .find(|a| a.get_info().name.to_lowercase().contains(&wanted))
                    .ok_or_else(|| Error::Runtime(format!("no adapter named like {name:?}")))?
            }
            _ => pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::from_env().unwrap_or_default(),
                compatible_surface: None,
                ..Default::default()
            }))
            .map_err(|e| Error::Runtime(format!("no adapter for {backends:?}: {e}")))?,
        };
        // What the kernels use and what burn's CubeCL kernels use (on a device it did not
        // make itself CubeCL compiles WGSL, and its matmul needs SHADER_INT64 where the
        // adapter has it): every feature of the adapter but the experimental ones and
        // mapped primary buffers, and the adapter's limits, as CubeCL's own WGSL setup asks.
        let features = adapter.features()
            - wgpu::Features::MAPPABLE_PRIMARY_BUFFERS
            - wgpu::Features::all_experimental_mask();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("wgpu-posenc-burn"),
            required_features: features,
            required_limits: adapter.limits(),
            memory_hints: wgpu::MemoryHints::MemoryUsage,
            ..Default::default()
        }))
        .map_err(|e| Error::Runtime(format!("requesting a device: {e}")))?;
        let backend = adapter.get_info().backend;
        Self::from_setup(WgpuSetup {
            instance,
            adapter,
            device,
            queue,
            backend,
        })
    }

    /// Starts burn's own wgpu runtime on burn's choice of adapter and device
    /// (`Device::wgpu_options().init_with_setup()`), and puts the kernels on that device and
    /// queue (with the limits and features burn requested).
    pub fn from_burn() -> Result<Self> {
        let (device, setup) = Device::wgpu_options()
            .init_with_setup()
            .map_err(|e| Error::Runtime(e.to_string()))?;
        Self::on(device, &setup)
    }

    /// Shares the caller's wgpu device and queue: registers `setup` with burn (its tensors
    /// then live on [`BurnPosEnc::device`]) and puts the kernels on the same device and queue.
    /// Request the device with [`PosEnc::request_device`] to give the kernels the limits and
    /// features they can use. Register a setup once (burn does not detect a second
    /// registration of the same handles).
    pub fn from_setup(setup: WgpuSetup) -> Result<Self> {
        let kept = WgpuSetup {
            instance: setup.instance.clone(),
            adapter: setup.adapter.clone(),
            device: setup.device.clone(),
            queue: setup.queue.clone(),
            backend: setup.backend,
        };
        let device = Device::wgpu_options()
            .setup(setup)
            .init()
            .map_err(|e| Error::Runtime(e.to_string()))?;
        Self::on(device, &kept)
    }

    fn on(device: Device, setup: &WgpuSetup) -> Result<Self> {
        let posenc = PosEnc::new(&setup.device, &setup.queue)?;
        Ok(Self {
            posenc,
            device,
            scratch: Default::default(),
        })
    }

    /// burn's device: create the tensors the bridge works on here.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The kernels themselves, on burn's device and queue.
    pub fn posenc(&self) -> &PosEnc {
        &self.posenc
    }

    /// A RoPE spec prepared for heads of `head_dim` (see [`PosEnc::rope`]).
    pub fn rope(&self, spec: &RopeSpec, head_dim: u64) -> Result<Rope> {
        Ok(self.posenc.rope(spec, head_dim)?)
    }

    /// RoPE over `x` `[batch, heads, seq, head_dim]` at `positions` (each array an i32 or u32
    /// burn tensor), in place when `x` alone holds its buffer, else into a new tensor in the
    /// same pass. Returns the rotated tensor.
    pub fn apply(
        &self,
        rope: &Rope,
        x: Tensor<4>,
        positions: Positions<Tensor<1, Int>>,
    ) -> Result<Tensor<4>> {
        let x = self.primitive(x, "x")?;
        let out = (!x.can_mut()).then(|| self.empty_like(&x));
        let positions = self.positions(positions, &x)?;
        let bx = self.bind(&x, "x")?;
        let bo = out.as_ref().map(|o| self.bind(o, "x")).transpose()?;
        let views = positions.views();
        let mut call = RopeCall::new(view(&bx), views);
        if let Some(o) = &bo {
            call = call.with_output(view(o));
        }
        self.submit(&x, |e| {
            positions.record_copies(e);
            rope.encode_call(e, &call).map(drop)
        })?;
        Ok(Tensor::from_primitive::<Cube>(out.unwrap_or(x)))
    }

    /// RoPE over Q and K in one dispatch with the same angles (K may have fewer heads), each
    /// as [`BurnPosEnc::apply`] does it.
    pub fn apply_qk(
        &self,
        rope: &Rope,
        q: Tensor<4>,
        k: Tensor<4>,
        positions: Positions<Tensor<1, Int>>,
    ) -> Result<(Tensor<4>, Tensor<4>)> {
        let (q, k) = (self.primitive(q, "q")?, self.primitive(k, "k")?);
        if !q.can_mut() || !k.can_mut() {
            // One of them is shared: each goes its own way (in place or into a new tensor).
            let positions2 = clone_positions(&positions);
            return Ok((
                self.apply(rope, Tensor::from_primitive::<Cube>(q), positions)?,
                self.apply(rope, Tensor::from_primitive::<Cube>(k), positions2)?,
            ));
        }
        let positions = self.positions(positions, &q)?;
        let (bq, bk) = (self.bind(&q, "q")?, self.bind(&k, "k")?);
        let views = positions.views();
        let call = RopeCall::new(view(&bq), views).with_k(view(&bk));
        self.submit(&q, |e| {
            positions.record_copies(e);
            rope.encode_call(e, &call).map(drop)
        })?;
        Ok((
            Tensor::from_primitive::<Cube>(q),
            Tensor::from_primitive::<Cube>(k),
        ))
    }

    /// The fused attention preprocessing of [`PosEnc::encode_qkv`] on burn tensors: from the
    /// packed projection `qkv` `[batch, q_heads + 2 kv_heads, seq, head_dim]` (a BSHD
    /// projection after `swap_dims(1, 2)`), Q normalized (with `norm`) and rotated, K
    /// normalized, rotated and V copied into the caches `[batch, kv_heads, cache_len,
    /// head_dim]` at each token's position. Returns Q (the first `q_heads` heads of `qkv`
    /// rewritten in place when `qkv` alone holds its buffer, else a new `[batch, q_heads, seq,
    /// head_dim]` tensor) and the caches, written in place ([`Error::Shared`] if a clone of
    /// one is alive).
    #[allow(clippy::too_many_arguments)]
    pub fn qkv(
        &self,
        rope: &Rope,
        qkv: Tensor<4>,
        kv_heads: u64,
        positions: Positions<Tensor<1, Int>>,
        k_cache: Tensor<4>,
        v_cache: Tensor<4>,
        norm: Option<&QkNorm>,
    ) -> Result<[Tensor<4>; 3]> {
        let x = self.primitive(qkv, "qkv")?;
        let k = self.primitive(k_cache, "the K cache")?;
        let v = self.primitive(v_cache, "the V cache")?;
        for (t, what) in [(&k, "the K cache"), (&v, "the V cache")] {
            if !t.can_mut() {
                return Err(Error::Shared { what });
            }
        }
        let shape = x.shape();
        let q_heads = (shape[1] as u64).saturating_sub(kv_heads.saturating_mul(2)) as usize;
        let out = (!x.can_mut()).then(|| self.empty(&x, &[shape[0], q_heads, shape[2], shape[3]]));
        let positions = self.positions(positions, &x)?;
        let bx = self.bind(&x, "qkv")?;
        let bo = out.as_ref().map(|o| self.bind(o, "Q out")).transpose()?;
        let (bk, bv) = (self.bind(&k, "the K cache")?, self.bind(&v, "the V cache")?);
        let cache = KvCache {
            k: view(&bk),
            v: view(&bv),
            index: CacheIndex::Position,
            overflow_flag: None,
        };
        let mut call = QkvCall::new(view(&bx), kv_heads, positions.views(), cache);
        if let Some(o) = &bo {
            call = call.with_q_out(view(o));
        }
        if let Some(norm) = norm {
            call = call.with_qk_norm(norm);
        }
        self.submit(&x, |e| {
            positions.record_copies(e);
            rope.encode_qkv(e, &call).map(drop)
        })?;
        let q = match out {
            Some(o) => Tensor::from_primitive::<Cube>(o),
            // Q is the first q_heads heads of the packed tensor, rewritten in place.
            None => Tensor::<4>::from_primitive::<Cube>(x).narrow(1, 0, q_heads),
        };
        Ok([
            q,
            Tensor::from_primitive::<Cube>(k),
            Tensor::from_primitive::<Cube>(v),
        ])
    }

    /// The sinusoidal table `[seq, d_model]` at positions `start..start + seq`, as a new f32
    /// tensor on the bridge's device.
    pub fn sinusoidal_table(
        &self,
        spec: &SinusoidalSpec,
        seq: usize,
        start: u32,
    ) -> Result<Tensor<2>> {
        // CubeCL allocates a tensor as one storage binding: check the size before burn
        // does (its shape product would overflow first).
        let bytes = (seq as u64).saturating_mul(spec.d_model).saturating_mul(4);
        let limit = self
            .posenc
            .device()
            .limits()
            .max_storage_buffer_binding_size;
        if bytes > limit {
            return Err(wgpu_posenc::Error::BufferLimit {
                what: "the sinusoidal table (burn allocates a tensor as one storage binding)",
                bytes,
                limit,
            }
            .into());
        }
        let empty = Tensor::<2>::empty([seq, spec.d_model as usize], &self.device);
        let t = self.primitive(empty, "the table")?;
        let b = self.bind_rows(&t)?;
        let view = TensorView::new(&b.buffer, b.layout).with_dtype(b.dtype);
        self.submit(&t, |e| {
            self.posenc
                .encode_sinusoidal_table(e, spec, &view, start)
                .map(drop)
        })?;
        Ok(Tensor::from_primitive::<Cube>(t))
    }

    /// The CubeCL tensor under `x` (float or int), checked to be on this bridge's device.
    fn primitive<const D: usize, K>(
        &self,
        x: Tensor<D, K>,
        what: &'static str,
    ) -> Result<CubeTensor>
    where
        K: Basic + BackendPrimitive<Cube, Primitive = CubeTensor>,
    {
        if x.device() != self.device {
            return Err(Error::OtherDevice {
                what,
                found: format!("{:?}", x.device()),
                ours: format!("{:?}", self.device),
            });
        }
        x.try_into_primitive::<Cube>().map_err(|e| Error::NotWgpu {
            what,
            detail: format!("{e:?}"),
        })
    }

    /// A new contiguous tensor of `x`'s dtype and shape.
    fn empty_like(&self, x: &CubeTensor) -> CubeTensor {
        let shape = x.shape();
        self.empty(x, &[shape[0], shape[1], shape[2], shape[3]])
    }

    /// A new contiguous tensor of `x`'s dtype, client and device with `dims`.
    fn empty(&self, x: &CubeTensor, dims: &[usize; 4]) -> CubeTensor {
        let bytes = dims.iter().product::<usize>() * x.dtype.size();
        let handle = x.client.empty(bytes);
        CubeTensor::new_contiguous(
            x.client.clone(),
            x.device.clone(),
            dims.to_vec().into(),
            handle,
            x.dtype,
        )
    }

    /// `x`'s buffer, offset and strides as a view, after burn's queued work is submitted.
    fn bind(&self, x: &CubeTensor, what: &'static str) -> Result<Bound> {
        let dtype = float_dtype(x.dtype, what)?;
        let layout = layout_of(x, what)?;
        self.bound(x, dtype, layout, what)
    }

    fn bind_rows(&self, x: &CubeTensor) -> Result<Bound> {
        let dtype = float_dtype(x.dtype, "the table")?;
        let shape = x.shape();
        let layout = Layout::rows(shape[0] as u64, shape[1] as u64);
        self.bound(x, dtype, layout, "the table")
    }

    fn bound(
        &self,
        x: &CubeTensor,
        dtype: Dtype,
        mut layout: Layout,
        what: &'static str,
    ) -> Result<Bound> {
        let managed = x
            .client
            .get_resource::<WgpuServer<AutoCompiler>>(x.handle.clone())
            .map_err(|e| Error::NotWgpu {
                what,
                detail: format!("{e:?}"),
            })?;
        let resource = managed.resource();
        let size = x.dtype.size() as u64;
        if resource.offset % size != 0 {
            return Err(Error::Runtime(format!(
                "{what} starts at byte {} of its buffer, not a whole element",
                resource.offset
            )));
        }
        layout.offset += resource.offset / size;
        let buffer = resource.buffer.clone();
        Ok(Bound {
            _guard: Box::new(managed),
            buffer,
            layout,
            dtype,
        })
    }

    /// Positions from burn int tensors, as u32 arrays copied into the bridge's own buffer
    /// before the dispatch: CubeCL pools small tensors in the buffers of large ones, and
    /// WebGPU refuses one buffer bound read-only (the positions) and writable (the tensor)
    /// in one dispatch. The copy is a few bytes a token; calls on the queue are ordered, so
    /// the buffer is reused from call to call.
    fn positions(
        &self,
        positions: Positions<Tensor<1, Int>>,
        x: &CubeTensor,
    ) -> Result<BoundPositions> {
        // The kernels check an array against its buffer, here the scratch buffer: the counts
        // are checked against the tensors first.
        let shape = x.shape();
        positions.check_counts(shape[0] as u64, shape[2] as u64, |t| t.dims()[0] as u64)?;
        let mut arrays = Vec::new();
        let mut first_error = None;
        let shape = positions.map(|t| {
            let i = arrays.len();
            match self.bind_ids(t) {
                Ok(b) => arrays.push(Some(b)),
                Err(e) => {
                    first_error.get_or_insert(e);
                    arrays.push(None);
                }
            }
            i
        });
        if let Some(e) = first_error {
            return Err(e);
        }
        let arrays: Vec<_> = arrays.into_iter().flatten().collect();
        // Each array at a multiple of 256 bytes (WebGPU's storage offset alignment), at
        // least one word long.
        let mut at = Vec::new();
        let mut end = 0u64;
        for (p, _) in &arrays {
            at.push(end);
            end += ((p.shape()[0] as u64 * 4).max(4)).next_multiple_of(256);
        }
        let scratch = self.scratch(end.max(256))?;
        Ok(BoundPositions {
            arrays,
            at,
            scratch,
            shape,
        })
    }

    /// The scratch buffer, grown to at least `bytes`.
    fn scratch(&self, bytes: u64) -> Result<wgpu::Buffer> {
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = scratch.as_ref().filter(|b| b.size() >= bytes) {
            return Ok(b.clone());
        }
        let limit = self.posenc.device().limits().max_buffer_size;
        let size = bytes.next_power_of_two().max(4096).min(limit);
        if size < bytes {
            return Err(Error::Runtime(format!(
                "position arrays of {bytes} bytes pass the device's largest buffer ({limit})"
            )));
        }
        let buffer = self.posenc.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgpu-posenc-burn positions"),
            size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        *scratch = Some(buffer.clone());
        Ok(buffer)
    }

    fn bind_ids(&self, t: Tensor<1, Int>) -> Result<(CubeTensor, Bound)> {
        let what = "positions";
        let p = self.primitive(t, what)?;
        if !matches!(p.dtype, DType::I32 | DType::U32) {
            return Err(Error::Dtype {
                what,
                dtype: p.dtype,
                expected: "positions are i32 or u32 (Tensor::<1, Int>::from_data with an i32 \
                           device setting, or .cast(DType::U32))",
            });
        }
        let strides = p.meta.strides();
        if p.meta.is_tiled() || (p.shape()[0] > 1 && strides[0] != 1) {
            return Err(Error::Layout {
                what,
                shape: p.shape().to_vec(),
                strides: strides.to_vec(),
                why: "positions must be contiguous",
            });
        }
        let b = self.bound(&p, Dtype::F32, Layout::rows(1, p.shape()[0] as u64), what)?;
        Ok((p, b))
    }

    /// Submits burn's queued work on the calling thread's stream (every tensor of a call is
    /// on the bridge's one device: `x`'s client is theirs), then what `encode` records.
    fn submit(
        &self,
        x: &CubeTensor,
        encode: impl FnOnce(&mut wgpu::CommandEncoder) -> wgpu_posenc::Result<()>,
    ) -> Result<()> {
        x.client
            .flush()
            .map_err(|e| Error::Runtime(format!("{e:?}")))?;
        let device = self.posenc.device();
        let mut encoder = device.create_command_encoder(&Default::default());
        encode(&mut encoder)?;
        self.posenc.queue().submit([encoder.finish()]);
        Ok(())
    }
}

/// Positions whose arrays are bound, and where each goes in the scratch buffer.
struct BoundPositions {
    arrays: Vec<(CubeTensor, Bound)>,
    at: Vec<u64>,
    scratch: wgpu::Buffer,
    shape: Positions<usize>,
}

impl BoundPositions {
    /// The arrays as the kernels read them: in the scratch buffer.
    fn views(&self) -> Positions<ArrayView<'_>> {
        self.shape
            .as_ref()
            .map(|&i| ArrayView::at(&self.scratch, self.at[i]))
    }

    /// Copies each array from its tensor into the scratch buffer.
    fn record_copies(&self, encoder: &mut wgpu::CommandEncoder) {
        for ((p, b), &at) in self.arrays.iter().zip(&self.at) {
            let bytes = p.shape()[0] as u64 * 4;
            if bytes > 0 {
                encoder.copy_buffer_to_buffer(
                    &b.buffer,
                    b.layout.offset * 4,
                    &self.scratch,
                    at,
                    bytes,
                );
            }
        }
    }
}

fn clone_positions(p: &Positions<Tensor<1, Int>>) -> Positions<Tensor<1, Int>> {
    p.as_ref().map(|t| t.clone())
}

fn view(b: &Bound) -> TensorView<'_> {
    TensorView::new(&b.buffer, b.layout).with_dtype(b.dtype)
}

/// The kernels' dtype of a float tensor.
fn float_dtype(dtype: DType, what: &'static str) -> Result<Dtype> {
    match dtype {
        DType::F32 => Ok(Dtype::F32),
        DType::F16 => Ok(Dtype::F16),
        DType::BF16 => Ok(Dtype::BF16),
        other => Err(Error::Dtype {
            what,
            dtype: other,
            expected: "the kernels take f32, f16 or bf16",
        }),
    }
}

/// The view of a rank-4 CubeCL tensor: its shape and its strides of batch, heads and seq
/// (the offset is the buffer's, added when bound).
fn layout_of(x: &CubeTensor, what: &'static str) -> Result<Layout> {
    let shape = x.meta.shape().to_vec();
    let strides = x.meta.strides().to_vec();
    let refuse = |why| Error::Layout {
        what,
        shape: shape.clone(),
        strides: strides.clone(),
        why,
    };
    if x.meta.is_tiled() {
        return Err(refuse("its storage is tiled"));
    }
    if shape.len() != 4 {
        return Err(refuse("it is not [batch, heads, seq, head_dim]"));
    }
    if shape[3] > 1 && strides[3] != 1 {
        return Err(refuse("its rows (the last axis) are not contiguous"));
    }
    // An empty tensor has nothing to overlap (burn gives its axes stride 0).
    let empty = shape.contains(&0);
    if !empty && (0..3).any(|a| shape[a] > 1 && strides[a] == 0) {
        return Err(refuse("an axis is broadcast (stride 0): its rows overlap"));
    }
    Ok(Layout {
        offset: 0,
        shape: [0, 1, 2, 3].map(|a| shape[a] as u64),
        strides: [0, 1, 2].map(|a| strides[a] as u64),
    })
}
