//! RMS norm as burn ops: HF's `LlamaRMSNorm` / `Qwen3RMSNorm` (`x / rms * w`) and
//! `Gemma3RMSNorm` (`x / rms * (1 + w)`), over the last axis, in f32.

use burn::tensor::{Device, Tensor, TensorData};
use wgpu_posenc::NormWeight;

/// An RMS norm with its factor (`w` or `1 + w`, computed on the host in f32 as HF does).
#[derive(Clone, Debug)]
pub struct RmsNorm {
    factor: Tensor<1>,
    eps: f64,
}

impl RmsNorm {
    /// The norm of weights `w` weighed as `weight` says.
    pub fn new(w: &[f32], weight: NormWeight, eps: f64, device: &Device) -> Self {
        let factor: Vec<f32> = match weight {
            NormWeight::Scale => w.to_vec(),
            NormWeight::OnePlus => w.iter().map(|w| 1.0 + w).collect(),
        };
        let data = TensorData::new(factor, [w.len()]);
        Self {
            factor: Tensor::from_data(data, device),
            eps,
        }
    }

    /// `x` normalized over its last axis.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        let ms = x.clone().square().mean_dim(D - 1).add_scalar(self.eps);
        x * ms.sqrt().recip() * self.factor.clone().unsqueeze::<D>()
    }
}

/// What random norm weights center on for `weight`: the value that leaves `x / rms` as it is.
pub fn neutral(weight: NormWeight) -> f32 {
    match weight {
        NormWeight::Scale => 1.0,
        NormWeight::OnePlus => 0.0,
    }
}
