//! Where a model's weights come from: an HF `model.safetensors` (float32, as
//! `save_pretrained` writes it), or random values of the same names and shapes for a
//! benchmark. Either gives burn tensors on the bridge's device, and burn's layers built of them.

use burn::module::Param;
use burn::nn::{Embedding, EmbeddingConfig, Initializer, Linear, LinearConfig};
use burn::tensor::{Device, Distribution, Tensor, TensorData};
use safetensors::{Dtype, SafeTensors};

use super::Result;

/// A source of named weights.
pub enum Weights {
    /// The bytes of a `.safetensors` file.
    File(Vec<u8>),
    /// Uniform values, scaled as a trained layer's would be (`1/sqrt(fan_in)`), and norm
    /// weights `norm_base` ± 0.1 (1 for `x * w`, 0 for `x * (1 + w)`). No biases.
    Random { norm_base: f32 },
}

impl Weights {
    /// Reads a `.safetensors` file.
    pub fn open(path: &std::path::Path) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        // Check the header once, so that later look-ups fail only on a name.
        SafeTensors::deserialize(&bytes)?;
        Ok(Self::File(bytes))
    }

    /// Whether the weights hold `name` (random weights hold every weight and no bias).
    pub fn has(&self, name: &str) -> bool {
        match self {
            Self::File(bytes) => SafeTensors::deserialize(bytes)
                .map(|st| st.tensor(name).is_ok())
                .unwrap_or(false),
            Self::Random { .. } => !name.ends_with(".bias"),
        }
    }

    /// `name` as host values, checked to have `dims` (small weights: norms).
    pub fn host(&self, name: &str, dims: &[usize]) -> Result<Vec<f32>> {
        match self {
            Self::File(bytes) => {
                let st = SafeTensors::deserialize(bytes)?;
                let t = st.tensor(name).map_err(|e| format!("{name}: {e}"))?;
                if t.dtype() != Dtype::F32 || t.shape() != dims {
                    return Err(format!(
                        "{name}: {:?} {:?}, expected F32 {dims:?}",
                        t.dtype(),
                        t.shape()
                    )
                    .into());
                }
                Ok(t.data()
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect())
            }
            Self::Random { norm_base } => {
                let mut rng = seeded(name);
                let n = dims.iter().product();
                Ok((0..n).map(|_| norm_base + 0.1 * next(&mut rng)).collect())
            }
        }
    }

    /// `name` as a tensor of `dims` on `device`.
    pub fn tensor<const D: usize>(
        &self,
        name: &str,
        dims: [usize; D],
        device: &Device,
    ) -> Result<Tensor<D>> {
        if let Self::Random { .. } = self
            && !name.ends_with("norm.weight")
        {
            // On the device: a model's worth of host random numbers takes seconds.
            let a = (dims[D - 1] as f64).powf(-0.5);
            return Ok(Tensor::random(dims, Distribution::Uniform(-a, a), device));
        }
        let values = self.host(name, &dims)?;
        Ok(Tensor::from_data(TensorData::new(values, dims), device))
    }

    /// A linear layer of the PyTorch weights `names` (each `[out_i, in]`) stacked along the
    /// output: one matmul gives their outputs side by side (the packed QKV projection, the
    /// gate and up projections). Biases where the file has them for all.
    pub fn linear(&self, names: &[(&str, usize)], inp: usize, device: &Device) -> Result<Linear> {
        let out: usize = names.iter().map(|&(_, o)| o).sum();
        let mut parts = Vec::new();
        for &(name, o) in names {
            parts.push(self.tensor(&format!("{name}.weight"), [o, inp], device)?);
        }
        let biased = names.iter().all(|(n, _)| self.has(&format!("{n}.bias")));
        let mut layer = LinearConfig::new(inp, out)
            .with_bias(biased)
            .with_initializer(Initializer::Zeros)
            .init(device);
        // burn keeps `[in, out]`.
        layer.weight = Param::from_tensor(Tensor::cat(parts, 0).transpose());
        if biased {
            let mut bias = Vec::new();
            for &(name, o) in names {
                bias.push(self.tensor(&format!("{name}.bias"), [o], device)?);
            }
            layer.bias = Some(Param::from_tensor(Tensor::cat(bias, 0)));
        }
        Ok(layer)
    }

    /// burn's embedding layer of `name` `[vocab, hidden]`.
    pub fn embedding(
        &self,
        name: &str,
        vocab: usize,
        hidden: usize,
        device: &Device,
    ) -> Result<Embedding> {
        let mut layer = EmbeddingConfig::new(vocab, hidden)
            .with_initializer(Initializer::Zeros)
            .init(device);
        layer.weight = Param::from_tensor(self.tensor(name, [vocab, hidden], device)?);
        Ok(layer)
    }
}

/// A linear layer without bias that multiplies by `weight` `[out, in]` (PyTorch's order):
/// the tied output projection, which is the embedding.
pub fn linear_of(weight: Tensor<2>, device: &Device) -> Linear {
    let [out, inp] = weight.dims();
    let mut layer = LinearConfig::new(inp, out)
        .with_bias(false)
        .with_initializer(Initializer::Zeros)
        .init(device);
    layer.weight = Param::from_tensor(weight.transpose());
    layer
}

/// SplitMix64 seeded by a name: each random norm weight the same from run to run.
fn seeded(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// The next value in [-1, 1).
fn next(state: &mut u64) -> f32 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}
