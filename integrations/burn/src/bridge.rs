//! [`BurnPosEnc`]: the kernels on burn's wgpu device and queue, and how it is made.

use burn::backend::wgpu::{WgpuSetup, wgpu};
use burn::tensor::Device;
use wgpu_posenc::{PosEnc, Rope, RopeSpec};

use crate::{Error, Result};

/// The kernels on burn's wgpu device: one [`PosEnc`] on the same `wgpu::Device` and
/// `wgpu::Queue` as burn's runtime. Cheap to clone.
#[derive(Clone, Debug)]
pub struct BurnPosEnc {
    pub(crate) posenc: PosEnc,
    pub(crate) device: Device,
    /// Where position arrays are copied before a dispatch (see `bind.rs`).
    pub(crate) scratch: std::sync::Arc<std::sync::Mutex<Option<wgpu::Buffer>>>,
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
}
