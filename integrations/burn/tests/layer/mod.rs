//! A Qwen3-style attention layer in burn with wgpu-posenc as its preprocessing stage: burn's
//! linear projections (Q, K and V as one packed projection), this crate's fused QK-norm +
//! RoPE + KV-cache write, burn's matmul and softmax with grouped-query attention, and burn's
//! output projection. Shared by `examples/attention.rs` and `tests/attention.rs`, which run
//! it against HF transformers' own `Qwen3Attention` (`tests/data/qwen3_attention.py`).

use burn::module::Param;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::softmax;
use burn::tensor::{Device, Tensor, TensorData};
use serde_json::Value;
use wgpu_posenc::{NormWeight, Positions, QkNorm, Rope, RopeSpec};
use wgpu_posenc_burn::{BurnPosEnc, Result};

#[path = "../model/gqa.rs"]
mod gqa;
use gqa::repeat_kv;

/// The HF golden file: config, weights, and each step's input and output.
pub fn golden() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/qwen3_attention.json"
    );
    let text = std::fs::read_to_string(path).expect("tests/data/qwen3_attention.json");
    serde_json::from_str(&text).expect("json")
}

/// A JSON array of numbers as f32.
pub fn f32s(v: &Value) -> Vec<f32> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_f64().expect("a number") as f32)
        .collect()
}

fn usize_of(v: &Value, key: &str) -> usize {
    v[key].as_u64().unwrap_or_else(|| panic!("{key}")) as usize
}

/// The layer: its projections, its norm, its prepared RoPE and its KV cache.
pub struct Attention {
    qkv: Linear,
    out: Linear,
    norm: QkNorm,
    rope: Rope,
    q_heads: usize,
    kv_heads: usize,
    head_dim: usize,
    /// `[1, kv_heads, capacity, head_dim]` each, written in place by the fused call.
    k_cache: Option<Tensor<4>>,
    v_cache: Option<Tensor<4>>,
    /// Tokens cached so far.
    len: usize,
}

/// A burn linear layer without bias holding `weight` given as PyTorch's `[out, in]`.
fn linear(weight: Vec<f32>, out: usize, inp: usize, device: &Device) -> Linear {
    let mut layer = LinearConfig::new(inp, out).with_bias(false).init(device);
    // burn keeps `[in, out]`.
    let w = Tensor::<2>::from_data(TensorData::new(weight, [out, inp]), device).transpose();
    layer.weight = Param::from_tensor(w);
    layer
}

impl Attention {
    /// The layer of the golden file, with a cache of `capacity` tokens.
    pub fn from_golden(bridge: &BurnPosEnc, golden: &Value, capacity: usize) -> Result<Self> {
        let device = bridge.device();
        let hidden = usize_of(golden, "hidden_size");
        let (q_heads, kv_heads) = (
            usize_of(golden, "num_attention_heads"),
            usize_of(golden, "num_key_value_heads"),
        );
        let head_dim = usize_of(golden, "head_dim");
        let w = &golden["weights"];
        // Q, K and V projections stacked: one matmul gives the packed projection.
        let mut packed = f32s(&w["q_proj"]);
        packed.extend(f32s(&w["k_proj"]));
        packed.extend(f32s(&w["v_proj"]));
        let qkv = linear(packed, (q_heads + 2 * kv_heads) * head_dim, hidden, device);
        let out = linear(f32s(&w["o_proj"]), hidden, q_heads * head_dim, device);
        let norm = QkNorm {
            q_weight: f32s(&w["q_norm"]),
            k_weight: f32s(&w["k_norm"]),
            eps: golden["rms_norm_eps"].as_f64().expect("eps") as f32,
            weight: NormWeight::Scale,
        };
        let spec = RopeSpec::new().base(golden["rope_theta"].as_f64().expect("theta"));
        let rope = bridge.rope(&spec, head_dim as u64)?;
        let cache = || Tensor::<4>::zeros([1, kv_heads, capacity, head_dim], device);
        Ok(Self {
            qkv,
            out,
            norm,
            rope,
            q_heads,
            kv_heads,
            head_dim,
            k_cache: Some(cache()),
            v_cache: Some(cache()),
            len: 0,
        })
    }

    /// One step: `hidden` `[1, tokens, hidden_size]` at the next positions, through the
    /// cache; returns the layer's output `[1, tokens, hidden_size]`.
    pub fn forward(&mut self, bridge: &BurnPosEnc, hidden: Tensor<3>) -> Result<Tensor<3>> {
        let [_, tokens, _] = hidden.dims();
        let (hq, hkv, d) = (self.q_heads, self.kv_heads, self.head_dim);
        let device = hidden.device();
        // burn's projection: [1, T, (hq + 2 hkv) d], seen as [1, hq + 2 hkv, T, d].
        let qkv = self
            .qkv
            .forward(hidden)
            .reshape([1, tokens, hq + 2 * hkv, d])
            .swap_dims(1, 2);
        // wgpu-posenc: QK-norm and RoPE, K and V into the cache at positions len.. .
        let start = self.len as u32;
        let [q, k_cache, v_cache] = bridge.qkv(
            &self.rope,
            qkv,
            hkv as u64,
            Positions::Start(start),
            self.k_cache.take().expect("cache"),
            self.v_cache.take().expect("cache"),
            Some(&self.norm),
        )?;
        self.len += tokens;
        let total = self.len;
        // burn's attention over the cached tokens, KV heads shared by hq / hkv Q heads each.
        let (k, v) = (
            repeat_kv(&k_cache, hq, total),
            repeat_kv(&v_cache, hq, total),
        );
        self.k_cache = Some(k_cache);
        self.v_cache = Some(v_cache);
        let scores = q
            .matmul(k.swap_dims(2, 3))
            .mul_scalar((d as f32).powf(-0.5));
        // Causal: token i of the step (position start + i) sees keys up to its own position.
        let mask: Vec<f32> = (0..tokens)
            .flat_map(|i| {
                (0..total).map(move |j| {
                    if j > start as usize + i {
                        f32::NEG_INFINITY
                    } else {
                        0.0
                    }
                })
            })
            .collect();
        let mask = Tensor::<2>::from_data(TensorData::new(mask, [tokens, total]), &device);
        let probs = softmax(scores + mask.unsqueeze::<4>(), 3);
        let attended = probs.matmul(v).swap_dims(1, 2).reshape([1, tokens, hq * d]);
        Ok(self.out.forward(attended))
    }
}
