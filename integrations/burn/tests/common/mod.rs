//! What the bridge's test files share: the bridge on the default adapter, random values,
//! burn tensors in and out, the reference, and what a tensor's buffer is in either backend.
#![allow(dead_code, reason = "each test file uses some of these")]

use std::sync::OnceLock;

use burn::backend::wgpu::{CubeBackend, CubeTensor};
use burn::backend::{BackendTypes, Cube};
use burn::tensor::{FloatDType, Tensor, TensorData};
use burn_fusion::{Fusion, FusionBackend};
use wgpu_posenc::reference;
use wgpu_posenc::{HostPositions, Layout, RopeSpec};
use wgpu_posenc_burn::BurnPosEnc;

pub fn bridge() -> &'static BurnPosEnc {
    static BRIDGE: OnceLock<BurnPosEnc> = OnceLock::new();
    BRIDGE.get_or_init(|| {
        let b = BurnPosEnc::init().expect("burn's wgpu runtime and the kernels");
        let info = b.posenc().device().adapter_info();
        eprintln!(
            "adapter: {} ({:?}), burn's backend {}",
            info.name,
            info.backend,
            std::any::type_name::<Cube>()
        );
        b
    })
}

/// The wgpu buffer under a burn tensor (CubeCL's pool page); with fusion, once the stream has
/// run what makes it.
pub fn buffer_of<const D: usize>(t: &Tensor<D>) -> burn::backend::wgpu::wgpu::Buffer {
    use burn::cubecl::wgpu::{AutoCompiler, WgpuServer};
    let p = t.clone().try_into_primitive::<Cube>().expect("cube");
    let p = <Cube as Resolve>::cube(p);
    let managed = p
        .client
        .get_resource::<WgpuServer<AutoCompiler>>(p.handle.clone())
        .expect("resource");
    managed.resource().buffer.clone()
}

/// Whether burn's `Cube` backend is fused in this build (burn's default features).
pub fn fused() -> bool {
    std::any::type_name::<Cube>().contains("Fusion")
}

/// The CubeCL tensor under a primitive of either backend the bridge runs on.
pub trait Resolve: BackendTypes {
    fn cube(t: Self::FloatTensorPrimitive) -> CubeTensor;
}

impl Resolve for CubeBackend {
    fn cube(t: CubeTensor) -> CubeTensor {
        t
    }
}

impl<B> Resolve for Fusion<B>
where
    B: FusionBackend + BackendTypes<FloatTensorPrimitive = CubeTensor>,
{
    fn cube(t: Self::FloatTensorPrimitive) -> CubeTensor {
        t.client.clone().resolve_tensor_float::<B>(t)
    }
}

/// SplitMix64: values in [-1, 1).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    pub fn values(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.next()).collect()
    }
}

pub fn tensor<const D: usize>(values: Vec<f32>, shape: [usize; D]) -> Tensor<D> {
    Tensor::from_data(TensorData::new(values, shape), bridge().device())
}

pub fn read<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.cast(FloatDType::F32)
        .into_data()
        .try_to_vec::<f32>()
        .expect("f32 data")
}

/// Largest |a - b| over two equal-length sequences.
pub fn max_diff(a: &[f32], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(&x, &y)| (f64::from(x) - y).abs())
        .fold(0.0, f64::max)
}

pub fn rope_reference(
    spec: &RopeSpec,
    shape: [usize; 4],
    x: &[f32],
    pos: HostPositions,
) -> Vec<f64> {
    let layout = Layout::bhsd(shape.map(|d| d as u64));
    let mut want: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    reference::rope(spec, &layout, &mut want, pos);
    want
}
