//! The state of the pair passes on one device: the device and queue, the limits and
//! alignments the planner works with, the bind group and pipeline layouts, the compiled
//! pipelines, the dummies of unused slots, and the caches of frequency buffers and bind
//! groups. `PosEnc` (`src/context.rs`) is the public front over it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use wgpu::util::DeviceExt;

pub use super::cache::CacheUsage;
use super::cache::FrequencyCache;
use super::{Kernel, Specialization};
use crate::error::{Error, Result};
use crate::spec::Dtype;

/// The pair passes' state on one device. Clones share the caches.
#[derive(Clone, Debug)]
pub(crate) struct Passes {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) adapter: Option<wgpu::AdapterInfo>,
    pub(crate) max_binding: u64,
    pub(crate) storage_align: u64,
    pub(crate) uniform_align: u64,
    /// The most invocations a subgroup sum may span (the smallest subgroup size of the
    /// device's adapter), or 0 where the device has no `Features::SUBGROUP` or the caller
    /// turned subgroups off.
    pub(crate) subgroup_min: u32,
    /// The pair passes' layouts (RoPE, sinusoidal), and the fused QKV kernel's.
    pair_layouts: Layouts,
    fused_layouts: Layouts,
    pub(crate) pipelines: Arc<Mutex<HashMap<Specialization, wgpu::ComputePipeline>>>,
    pub(crate) frequencies: Arc<Mutex<FrequencyCache>>,
    /// Bound to read-only slots a variant does not use (ids, offsets, caches).
    pub(crate) dummy: wgpu::Buffer,
    /// Bound to the second-tensor slot when a variant does not use it; a buffer cannot be
    /// bound read-only and read-write in one dispatch.
    pub(crate) dummy_rw: wgpu::Buffer,
    /// Bound to the cache-flag slot when unused: a writable slot of its own, since two
    /// writable bindings of one buffer must not overlap (WebGPU).
    pub(crate) dummy_flag: wgpu::Buffer,
    /// Bound to the fused kernel's K and V cache slots when the cache is empty (nothing is
    /// stored there): one writable buffer each, for the same reason.
    pub(crate) dummy_kv: [wgpu::Buffer; 2],
    /// Bind groups of recent small passes (see `kernels::pass::BindCache`).
    pub(crate) bind_groups: Arc<Mutex<super::cache::BindCache>>,
    /// The last frequencies a pass asked for, packed.
    pub(crate) last_frequencies: Arc<Mutex<Option<super::cache::FrequencyMemo>>>,
    /// Records what the pair passes dispatch, for replay on other WebGPU implementations.
    #[cfg(feature = "capture")]
    pub(crate) capture: Option<super::capture::Capture>,
    /// The position grid kernel (`kernels::position_grid`), compiled on first use.
    pub(crate) grid_pipeline: Arc<Mutex<Option<super::standalone::Standalone>>>,
    /// The last position grid's buffers (its uniform and its description) with the bytes
    /// they hold: a loop over one grid uploads them once.
    pub(crate) grid_buffers: Arc<Mutex<Option<HeldBuffers>>>,
    /// The error scopes of buffer and pipeline creation (see `kernels::scope`).
    pub(crate) scopes: Arc<super::scope::Scopes>,
}

/// Buffers kept with the bytes they were made from (the key of their reuse).
pub(crate) type HeldBuffers = (Vec<u8>, wgpu::Buffer, wgpu::Buffer);

/// A kernel's bind group layout and the pipeline layout over it.
#[derive(Clone, Debug)]
pub(crate) struct Layouts {
    pub(crate) group: wgpu::BindGroupLayout,
    pub(crate) pipeline: wgpu::PipelineLayout,
}

impl Passes {
    /// Wraps the caller's device and queue. Nothing is compiled until first use.
    ///
    /// The device must have the limits the kernels need (WebGPU's default limits are
    /// enough; [`wgpu::Limits::downlevel_defaults`] is not: it allows 4 storage buffers per
    /// stage, the kernels bind 8): an [`Error::DeviceLimit`] names the one that is short.
    pub(crate) fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Result<Self> {
        let limits = device.limits();
        check_limits(&limits)?;
        let layouts = |kernel| {
            let group = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some("wgpu-posenc"),
                entries: &super::bind::layout_entries(&super::bind::layout_of(kernel)),
            });
            let pipeline = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("wgpu-posenc"),
                bind_group_layouts: &[Some(&group)],
                immediate_size: 0,
            });
            Layouts { group, pipeline }
        };
        let dummy = |label| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytemuck::cast_slice(&[0u32; 4]),
                usage: wgpu::BufferUsages::STORAGE,
            })
        };
        Ok(Self {
            device: device.clone(),
            queue: queue.clone(),
            adapter: None,
            max_binding: limits
                .max_storage_buffer_binding_size
                .min(limits.max_buffer_size),
            storage_align: u64::from(limits.min_storage_buffer_offset_alignment).max(16),
            uniform_align: u64::from(limits.min_uniform_buffer_offset_alignment).max(16),
            subgroup_min: if device.features().contains(wgpu::Features::SUBGROUP) {
                device.adapter_info().subgroup_min_size
            } else {
                0
            },
            pair_layouts: layouts(Kernel::Rope),
            fused_layouts: layouts(Kernel::Fused),
            pipelines: Arc::default(),
            frequencies: Arc::default(),
            dummy: dummy("wgpu-posenc unused read-only binding"),
            dummy_rw: dummy("wgpu-posenc unused second tensor"),
            dummy_flag: dummy("wgpu-posenc unused cache flag"),
            dummy_kv: [
                dummy("wgpu-posenc empty K cache"),
                dummy("wgpu-posenc empty V cache"),
            ],
            bind_groups: Arc::default(),
            last_frequencies: Arc::default(),
            #[cfg(feature = "capture")]
            capture: None,
            grid_pipeline: Arc::default(),
            grid_buffers: Arc::default(),
            scopes: Arc::default(),
        })
    }

    /// Records every pass this context dispatches into `capture` from now on (and the
    /// contents of the buffers it creates), so that the dispatches can be replayed elsewhere.
    #[cfg(feature = "capture")]
    pub(crate) fn with_capture(mut self, capture: &super::capture::Capture) -> Self {
        let [k, v] = &self.dummy_kv;
        for dummy in [&self.dummy, &self.dummy_rw, &self.dummy_flag, k, v] {
            capture.note_buffer(dummy, &vec![0; dummy.size() as usize]);
        }
        self.capture = Some(capture.clone());
        self
    }

    /// A buffer with `contents` (noted by the capture, when there is one), after checking
    /// its size against the device's `max_buffer_size`.
    pub(crate) fn buffer_init(
        &self,
        label: &'static str,
        contents: &[u8],
        usage: wgpu::BufferUsages,
    ) -> Result<wgpu::Buffer> {
        self.check_buffer_size(label, contents.len() as u64)?;
        let buffer = self.scoped(label, || {
            self.device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents,
                    usage,
                })
        })?;
        #[cfg(feature = "capture")]
        if let Some(capture) = &self.capture {
            capture.note_buffer(&buffer, contents);
        }
        Ok(buffer)
    }

    /// `bytes` must fit one buffer of the device.
    pub(crate) fn check_buffer_size(&self, what: &'static str, bytes: u64) -> Result<()> {
        let limit = self.device.limits().max_buffer_size;
        if bytes > limit {
            return Err(Error::BufferLimit { what, bytes, limit });
        }
        Ok(())
    }

    /// Caps the bytes one storage binding may cover below the device's limit. Larger
    /// tensors are split into more dispatches; the result is the same. Useful to share a
    /// binding budget, and to exercise the splitting on an adapter with large bindings.
    pub(crate) fn with_max_binding_size(mut self, bytes: u64) -> Self {
        self.max_binding = self.max_binding.min(bytes);
        self
    }

    /// Lets the kernels use subgroup operations where the device has them (`on`), or not.
    pub(crate) fn with_subgroups(mut self, on: bool) -> Self {
        if !on {
            self.subgroup_min = 0;
        }
        self
    }

    /// Raises the alignment of binding window offsets above the device's
    /// `min_storage_buffer_offset_alignment` (to a power of two, at most 2^16 bytes), e.g. to
    /// WebGPU's default of 256 so that every dispatch is also valid on a browser's adapter
    /// (the capture check in `tests/dawn.rs` does). Results are the same.
    pub(crate) fn with_storage_offset_alignment(mut self, bytes: u64) -> Self {
        let bytes = bytes.clamp(1, 1 << 16).next_power_of_two();
        self.storage_align = self.storage_align.max(bytes);
        self.uniform_align = self.uniform_align.max(bytes);
        self
    }

    /// A name for messages: the adapter's name, or "this device".
    pub(crate) fn adapter_name(&self) -> String {
        self.adapter.as_ref().map_or_else(
            || "this device".to_string(),
            |a| format!("{} ({:?})", a.name, a.backend),
        )
    }

    /// Checks that the device can run a tensor of `dtype` (bf16 runs everywhere: it is
    /// unpacked from u32 words).
    pub(crate) fn check_dtype(&self, dtype: Dtype) -> Result<()> {
        if dtype == Dtype::F16 && !self.device.features().contains(wgpu::Features::SHADER_F16) {
            // A device this context requested has every optional feature its adapter has;
            // a caller's device may have been created without it.
            let hint = if self.adapter.is_some() {
                ": use f32, or an adapter with f16 shaders (Vulkan, Metal, DX12); the GL \
                 backend has none"
            } else {
                ": request wgpu::Features::SHADER_F16 in the DeviceDescriptor when the \
                 adapter lists it (adapter.features()), or use f32"
            };
            return Err(Error::MissingFeature {
                what: "an f16 tensor",
                feature: wgpu::Features::SHADER_F16,
                adapter: self.adapter_name(),
                hint,
            });
        }
        Ok(())
    }

    /// The pipeline of a specialization, compiled on first use; a device error (which
    /// wgpu would otherwise report to its uncaptured-error handler, by default a panic) is
    /// returned.
    pub(crate) fn pipeline(&self, spec: Specialization) -> Result<wgpu::ComputePipeline> {
        let mut cache = self.pipelines.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = cache.get(&spec) {
            return Ok(p.clone());
        }
        // A browser's WebGPU compiles WGSL as the standard has it; elsewhere naga does.
        let source = match self.device.adapter_info().backend {
            wgpu::Backend::BrowserWebGpu => spec.source().into(),
            _ => spec.naga_source(),
        };
        let pipeline = self.scoped("compiling a kernel", || {
            let module = self
                .device
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some("wgpu-posenc"),
                    source: wgpu::ShaderSource::Wgsl(source),
                });
            let constants = spec.constants();
            self.device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some("wgpu-posenc"),
                    layout: Some(&self.layouts(spec.kernel()).pipeline),
                    module: &module,
                    entry_point: Some("main"),
                    compilation_options: wgpu::PipelineCompilationOptions {
                        constants: &constants,
                        // Only the QK-norm kernel uses workgroup memory, and writes each
                        // element before it reads it.
                        zero_initialize_workgroup_memory: false,
                    },
                    cache: None,
                })
        })?;
        cache.insert(spec, pipeline.clone());
        Ok(pipeline)
    }

    /// The bind group and pipeline layouts of `kernel`'s variants.
    pub(crate) fn layouts(&self, kernel: Kernel) -> &Layouts {
        match kernel {
            Kernel::Fused => &self.fused_layouts,
            Kernel::Rope | Kernel::Sinusoidal => &self.pair_layouts,
        }
    }

    /// Runs `make` under validation and out-of-memory error scopes and returns what it
    /// made, or the device's error as [`Error::Device`] (on the web: from the next
    /// [`Passes::settle`]).
    pub(crate) fn scoped<T>(&self, what: &'static str, make: impl FnOnce() -> T) -> Result<T> {
        self.scopes.run(&self.device, what, make)
    }

    /// Waits for the device's verdict on everything made so far and returns the first error;
    /// after one the caches are dropped, pipelines included, since one of them may hold the
    /// object that failed. Native: nothing is pending, this returns at once.
    pub(crate) async fn settle(&self) -> Result<()> {
        let settled = self.scopes.settle().await;
        if settled.is_err() {
            self.clear_caches();
            self.pipelines
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
        }
        settled
    }

    /// The packed frequency buffer for `words`, uploaded on first use and kept in a
    /// cache bounded by [`FrequencyCache`]'s limits.
    pub(crate) fn frequency_buffer(&self, words: Vec<u32>) -> Result<wgpu::Buffer> {
        let mut cache = self.frequencies.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(buffer) = cache.get(&words) {
            return Ok(buffer);
        }
        let buffer = self.buffer_init(
            "wgpu-posenc frequencies",
            bytemuck::cast_slice(&words),
            wgpu::BufferUsages::STORAGE,
        )?;
        cache.insert(words, buffer.clone());
        Ok(buffer)
    }

    /// Drops every cached frequency buffer and bind group (compiled pipelines stay): after
    /// this, the context holds none of the caller's buffers.
    pub(crate) fn clear_caches(&self) {
        *self.frequencies.lock().unwrap_or_else(|e| e.into_inner()) = FrequencyCache::default();
        *self.bind_groups.lock().unwrap_or_else(|e| e.into_inner()) = Default::default();
        *self
            .last_frequencies
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = None;
        *self.grid_buffers.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// What the caches hold now (see [`CacheUsage`] for their bounds).
    pub(crate) fn cache_usage(&self) -> CacheUsage {
        let frequencies = self.frequencies.lock().unwrap_or_else(|e| e.into_inner());
        let binds = self.bind_groups.lock().unwrap_or_else(|e| e.into_inner());
        CacheUsage {
            frequency_buffers: frequencies.entries.len(),
            frequency_bytes: frequencies.bytes,
            bind_groups: binds.len(),
            held_bytes: binds.held_bytes(),
        }
    }
}

/// The device limits the kernels need, each checked with its name.
fn check_limits(limits: &wgpu::Limits) -> Result<()> {
    let need = [
        (
            "max_storage_buffers_per_shader_stage",
            8,
            u64::from(limits.max_storage_buffers_per_shader_stage),
        ),
        (
            "max_bindings_per_bind_group",
            9,
            u64::from(limits.max_bindings_per_bind_group),
        ),
        ("max_bind_groups", 1, u64::from(limits.max_bind_groups)),
        (
            "max_uniform_buffers_per_shader_stage",
            1,
            u64::from(limits.max_uniform_buffers_per_shader_stage),
        ),
        (
            "max_uniform_buffer_binding_size",
            size_of::<super::plan::Params>() as u64,
            limits.max_uniform_buffer_binding_size,
        ),
        (
            "max_compute_workgroup_size_x",
            super::WORKGROUP,
            u64::from(limits.max_compute_workgroup_size_x),
        ),
        (
            "max_compute_invocations_per_workgroup",
            super::WORKGROUP,
            u64::from(limits.max_compute_invocations_per_workgroup),
        ),
        (
            "max_compute_workgroups_per_dimension",
            65_535,
            u64::from(limits.max_compute_workgroups_per_dimension),
        ),
        (
            "max_storage_buffer_binding_size",
            4096,
            limits.max_storage_buffer_binding_size,
        ),
    ];
    for (limit, needed, got) in need {
        if got < needed {
            return Err(Error::DeviceLimit { limit, needed, got });
        }
    }
    Ok(())
}
