//! One decoder layer's attention: burn's packed QKV projection, then QK-norm, RoPE and the
//! KV-cache write either by the bridge's one fused call or by burn's own ops
//! (`RotaryEncoding`, `slice_assign`), then burn's grouped-query attention and output
//! projection.

use burn::nn::{Linear, RotaryEncoding, RotaryEncodingConfig};
use burn::tensor::activation::softmax;
use burn::tensor::{Device, Tensor};
use wgpu_posenc::{Positions, QkNorm, Rope};
use wgpu_posenc_burn::BurnPosEnc;

use super::config::Config;
use super::gqa::repeat_kv;
use super::norm::RmsNorm;
use super::weights::Weights;
use super::{Result, Rotation};

/// How a layer rotates Q and K, prepared once per distinct layer kind and shared (boxed:
/// both are large).
#[derive(Clone, Debug)]
pub enum Rotator {
    /// The bridge's fused QK-norm + RoPE + cache write.
    Bridge(Box<Rope>),
    /// burn's rotary encoding (pairs `(2j, 2j + 1)`, base only: not HF's numbers).
    Burn(Box<RotaryEncoding>),
}

impl Rotator {
    /// The rotator of each layer type of `config` (`config.rope.layer_types`' order).
    pub fn per_type(
        bridge: &BurnPosEnc,
        config: &Config,
        rotation: Rotation,
        capacity: usize,
    ) -> Result<Vec<Self>> {
        let mut out = Vec::new();
        for (name, rope) in &config.rope.layer_types {
            let rope = rope
                .as_ref()
                .ok_or_else(|| format!("layer type {name} has no RoPE: not run here"))?;
            out.push(match rotation {
                Rotation::Bridge => Self::Bridge(Box::new(bridge.rope(&rope.spec, rope.head_dim)?)),
                Rotation::Burn => Self::Burn(Box::new(
                    RotaryEncodingConfig::new(capacity, rope.head_dim as usize)
                        .with_theta(rope.spec.base as f32)
                        .init(bridge.device()),
                )),
            });
        }
        Ok(out)
    }
}

/// The layer's attention, with its own KV cache.
pub struct Attention {
    qkv: Linear,
    out: Linear,
    rotator: Rotator,
    /// For the bridge (host weights).
    norm: Option<QkNorm>,
    /// For burn's path: the same norm as burn ops.
    burn_norm: Option<(RmsNorm, RmsNorm)>,
    q_heads: usize,
    kv_heads: usize,
    head_dim: usize,
    scale: f64,
    softcap: Option<f64>,
    /// `[1, kv_heads, capacity, head_dim]` each; taken during a call (the bridge writes
    /// them in place and needs them unshared).
    k_cache: Option<Tensor<4>>,
    v_cache: Option<Tensor<4>>,
}

impl Attention {
    /// Layer `i`'s attention from `weights`, with `rotator` and a cache of `capacity` tokens.
    pub fn new(
        weights: &Weights,
        config: &Config,
        i: usize,
        rotator: Rotator,
        capacity: usize,
        device: &Device,
    ) -> Result<Self> {
        let p = format!("model.layers.{i}.self_attn");
        let (hq, hkv, d) = (config.q_heads, config.kv_heads, config.head_dim);
        let (q, k, v) = (
            format!("{p}.q_proj"),
            format!("{p}.k_proj"),
            format!("{p}.v_proj"),
        );
        let qkv = weights.linear(
            &[(&q, hq * d), (&k, hkv * d), (&v, hkv * d)],
            config.hidden,
            device,
        )?;
        let out = weights.linear(&[(&format!("{p}.o_proj"), config.hidden)], hq * d, device)?;
        let norm = match &config.rope.qk_norm {
            Some(n) => Some(QkNorm {
                q_weight: weights.host(&format!("{p}.q_norm.weight"), &[d])?,
                k_weight: weights.host(&format!("{p}.k_norm.weight"), &[d])?,
                eps: n.eps,
                weight: n.weight,
            }),
            None => None,
        };
        let burn_norm = norm.as_ref().map(|n| {
            let make = |w: &[f32]| RmsNorm::new(w, n.weight, f64::from(n.eps), device);
            (make(&n.q_weight), make(&n.k_weight))
        });
        let cache = || Tensor::<4>::zeros([1, hkv, capacity, d], device);
        Ok(Self {
            qkv,
            out,
            rotator,
            norm,
            burn_norm,
            q_heads: hq,
            kv_heads: hkv,
            head_dim: d,
            scale: config.attn_scale,
            softcap: config.attn_softcap,
            k_cache: Some(cache()),
            v_cache: Some(cache()),
        })
    }

    /// `x` `[1, T, hidden]` at positions `start..start + T` through the cache; `mask`
    /// `[1, 1, T, start + T]` (0 or -inf), or `None` where every cached key is seen.
    pub fn forward(
        &mut self,
        bridge: &BurnPosEnc,
        x: Tensor<3>,
        start: usize,
        mask: Option<Tensor<4>>,
    ) -> Result<Tensor<3>> {
        let [_, tokens, _] = x.dims();
        let (hq, hkv, d) = (self.q_heads, self.kv_heads, self.head_dim);
        // [1, T, (hq + 2 hkv) d] seen as [1, hq + 2 hkv, T, d].
        let qkv = self
            .qkv
            .forward(x)
            .reshape([1, tokens, hq + 2 * hkv, d])
            .swap_dims(1, 2);
        let q = self.rotate_and_cache(bridge, qkv, start)?;
        let total = start + tokens;
        let k_cache = self.k_cache.as_ref().ok_or("cache")?;
        let v_cache = self.v_cache.as_ref().ok_or("cache")?;
        // KV heads shared by hq / hkv Q heads each.
        let (k, v) = (repeat_kv(k_cache, hq, total), repeat_kv(v_cache, hq, total));
        let mut scores = q.matmul(k.swap_dims(2, 3)).mul_scalar(self.scale);
        if let Some(c) = self.softcap {
            scores = scores.div_scalar(c).tanh().mul_scalar(c);
        }
        if let Some(mask) = mask {
            scores = scores + mask;
        }
        let probs = softmax(scores, 3);
        let attended = probs.matmul(v).swap_dims(1, 2).reshape([1, tokens, hq * d]);
        Ok(self.out.forward(attended))
    }

    /// Q normalized and rotated, and K (normalized, rotated) and V written into the caches
    /// at `start..`, the bridge's way or burn's.
    fn rotate_and_cache(
        &mut self,
        bridge: &BurnPosEnc,
        qkv: Tensor<4>,
        start: usize,
    ) -> Result<Tensor<4>> {
        let (hq, hkv, d) = (self.q_heads, self.kv_heads, self.head_dim);
        let k_cache = self.k_cache.take().ok_or("cache")?;
        let v_cache = self.v_cache.take().ok_or("cache")?;
        match &self.rotator {
            Rotator::Bridge(rope) => {
                let start = u32::try_from(start)?;
                let [q, k_cache, v_cache] = bridge.qkv(
                    rope,
                    qkv,
                    hkv as u64,
                    Positions::Start(start),
                    k_cache,
                    v_cache,
                    self.norm.as_ref(),
                )?;
                self.k_cache = Some(k_cache);
                self.v_cache = Some(v_cache);
                Ok(q)
            }
            Rotator::Burn(rotary) => {
                let tokens = qkv.dims()[2];
                let mut q = qkv.clone().narrow(1, 0, hq);
                let mut k = qkv.clone().narrow(1, hq, hkv);
                let v = qkv.narrow(1, hq + hkv, hkv);
                if let Some((qn, kn)) = &self.burn_norm {
                    q = qn.forward(q);
                    k = kn.forward(k);
                }
                let q = rotary.apply(q, start);
                let k = rotary.apply(k, start);
                let at = [0..1, 0..hkv, start..start + tokens, 0..d];
                self.k_cache = Some(k_cache.slice_assign(at.clone(), k));
                self.v_cache = Some(v_cache.slice_assign(at, v));
                Ok(q)
            }
        }
    }
}

/// The additive mask `[1, 1, T, start + T]` of `T` queries at `start..`: a query at `p`
/// sees keys at `j <= p` and, in a sliding layer of window `w`, `j > p - w` (HF's
/// `causal_mask_function` and `sliding_window_overlay`). `None` where it hides nothing.
pub fn mask(
    tokens: usize,
    start: usize,
    window: Option<usize>,
    device: &Device,
) -> Option<Tensor<4>> {
    let total = start + tokens;
    let seen = |i: usize, j: usize| {
        let p = start + i;
        j <= p && window.is_none_or(|w| j + w > p)
    };
    let values: Vec<f32> = (0..tokens)
        .flat_map(|i| (0..total).map(move |j| if seen(i, j) { 0.0 } else { f32::NEG_INFINITY }))
        .collect();
    if values.iter().all(|&v| v == 0.0) {
        return None;
    }
    let data = burn::tensor::TensorData::new(values, [1, 1, tokens, total]);
    Some(Tensor::from_data(data, device))
}
