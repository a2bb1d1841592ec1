//! Whole decoder-only language models in burn with the bridge as each layer's attention
//! preprocessing: Qwen3, Llama 3.x and Gemma 3 (text) through one code path with per-family
//! switches, read from HF's `config.json` and `model.safetensors` (or random weights of a
//! given config), with the RoPE of every layer from the crate's `HfRope`. Shared by
//! `tests/models.rs`, which checks greedy generation against HF's `generate`, and
//! `examples/generate.rs`.
#![allow(dead_code, reason = "the test and the example each use some of it")]

mod attention;
pub mod config;
mod gqa;
mod norm;
mod weights;

use std::path::Path;

use burn::nn::{Embedding, Linear};
use burn::tensor::activation::{gelu, gelu_approximate, silu};
use burn::tensor::{Int, Tensor, TensorData};
use serde_json::Value;
use wgpu_posenc_burn::BurnPosEnc;

use attention::{Attention, Rotator, mask};
use config::{Activation, Config, Family};
use norm::RmsNorm;
use weights::{Weights, linear_of};

/// Loading and running errors: the bridge's, burn's readback, files, JSON.
pub type Result<T, E = Box<dyn std::error::Error>> = std::result::Result<T, E>;

/// Who rotates Q and K: the bridge (HF's numbers), or burn's own `RotaryEncoding` for a
/// side-by-side timing (burn pairs interleaved lanes and takes only the base: its numbers are
/// not HF's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rotation {
    /// `BurnPosEnc::qkv`: QK-norm, RoPE and the cache write in one call.
    Bridge,
    /// burn ops for the QK-norm, `nn::RotaryEncoding`, `slice_assign` into the caches.
    Burn,
}

/// The directory of the committed test model `name` (`qwen3`, `llama3`, `gemma3`).
pub fn model_dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/models")
        .join(name)
}

/// The committed test models.
pub const MODELS: [&str; 3] = ["qwen3", "llama3", "gemma3"];

/// HF's greedy generation on a model directory's `golden.json`.
pub struct Golden {
    /// The prompt's token ids.
    pub prompt: Vec<u32>,
    /// `generate(do_sample=False)`'s new tokens.
    pub tokens: Vec<u32>,
    /// The logits that chose each token (step 0: the prompt's last position).
    pub logits: Vec<Vec<f64>>,
}

impl Golden {
    /// Reads `dir/golden.json`.
    pub fn read(dir: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(dir.join("golden.json"))?;
        let v: Value = serde_json::from_str(&text)?;
        let ids = |key: &str| -> Result<Vec<u32>> {
            let arr = v[key].as_array().ok_or(format!("golden.json: {key}"))?;
            arr.iter()
                .map(|x| x.as_u64().map(|x| x as u32).ok_or("a token id".into()))
                .collect()
        };
        let logits = v["logits"]
            .as_array()
            .ok_or("golden.json: logits")?
            .iter()
            .map(|step| {
                let step = step.as_array().ok_or("a step's logits")?;
                step.iter()
                    .map(|x| x.as_f64().ok_or("a logit".into()))
                    .collect::<Result<Vec<f64>>>()
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            prompt: ids("prompt")?,
            tokens: ids("tokens")?,
            logits,
        })
    }
}

/// The gated MLP: `down(act(gate(x)) * up(x))`, gate and up as one packed projection.
struct Mlp {
    gate_up: Linear,
    down: Linear,
    intermediate: usize,
    activation: Activation,
}

impl Mlp {
    fn new(w: &Weights, c: &Config, i: usize, device: &burn::tensor::Device) -> Result<Self> {
        let p = format!("model.layers.{i}.mlp");
        let (gate, up) = (format!("{p}.gate_proj"), format!("{p}.up_proj"));
        let parts = [
            (gate.as_str(), c.intermediate),
            (up.as_str(), c.intermediate),
        ];
        Ok(Self {
            gate_up: w.linear(&parts, c.hidden, device)?,
            down: w.linear(
                &[(&format!("{p}.down_proj"), c.hidden)],
                c.intermediate,
                device,
            )?,
            intermediate: c.intermediate,
            activation: c.activation,
        })
    }

    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let gate_up = self.gate_up.forward(x);
        let gate = gate_up.clone().narrow(2, 0, self.intermediate);
        let up = gate_up.narrow(2, self.intermediate, self.intermediate);
        let gate = match self.activation {
            Activation::Silu => silu(gate),
            Activation::GeluTanh => gelu_approximate(gate),
            Activation::Gelu => gelu(gate),
        };
        self.down.forward(gate * up)
    }
}

/// One decoder layer: pre-norm attention and MLP with residuals; Gemma 3 also normalizes
/// each sublayer's output (`post_attention_layernorm`, `post_feedforward_layernorm`) and
/// names the MLP's pre-norm `pre_feedforward_layernorm`.
struct Layer {
    attention: Attention,
    mlp: Mlp,
    input_norm: RmsNorm,
    post_attention_norm: RmsNorm,
    /// Gemma 3's; elsewhere `post_attention_norm` is the MLP's pre-norm.
    sandwich: Option<(RmsNorm, RmsNorm)>,
    window: Option<usize>,
}

impl Layer {
    fn new(
        w: &Weights,
        c: &Config,
        i: usize,
        rotator: Rotator,
        cap: usize,
        device: &burn::tensor::Device,
    ) -> Result<Self> {
        let norm = |name: &str| -> Result<RmsNorm> {
            let v = w.host(&format!("model.layers.{i}.{name}.weight"), &[c.hidden])?;
            Ok(RmsNorm::new(&v, c.norm_weight, c.eps, device))
        };
        let sandwich = match c.family {
            Family::Gemma3 => Some((
                norm("pre_feedforward_layernorm")?,
                norm("post_feedforward_layernorm")?,
            )),
            Family::Qwen3 | Family::Llama => None,
        };
        Ok(Self {
            attention: Attention::new(w, c, i, rotator, cap, device)?,
            mlp: Mlp::new(w, c, i, device)?,
            input_norm: norm("input_layernorm")?,
            post_attention_norm: norm("post_attention_layernorm")?,
            sandwich,
            window: c.windows[i],
        })
    }

    fn forward(
        &mut self,
        bridge: &BurnPosEnc,
        x: Tensor<3>,
        start: usize,
        mask: Option<Tensor<4>>,
    ) -> Result<Tensor<3>> {
        let attended =
            self.attention
                .forward(bridge, self.input_norm.forward(x.clone()), start, mask)?;
        Ok(match &self.sandwich {
            Some((pre_ff, post_ff)) => {
                let x = x + self.post_attention_norm.forward(attended);
                let mlp = self.mlp.forward(pre_ff.forward(x.clone()));
                x + post_ff.forward(mlp)
            }
            None => {
                let x = x + attended;
                let mlp = self
                    .mlp
                    .forward(self.post_attention_norm.forward(x.clone()));
                x + mlp
            }
        })
    }
}

/// A whole model with its KV caches.
pub struct Model {
    /// What it was built from.
    pub config: Config,
    bridge: BurnPosEnc,
    embed: Embedding,
    layers: Vec<Layer>,
    norm: RmsNorm,
    lm_head: Linear,
    /// Tokens cached so far.
    len: usize,
    capacity: usize,
}

impl Model {
    /// The model in `dir` (`config.json`, `model.safetensors`), with caches of `capacity`
    /// tokens.
    pub fn load(
        bridge: &BurnPosEnc,
        dir: &Path,
        rotation: Rotation,
        capacity: usize,
    ) -> Result<Self> {
        let text = std::fs::read_to_string(dir.join("config.json"))?;
        let config = Config::from_json(&serde_json::from_str(&text)?)?;
        let weights = Weights::open(&dir.join("model.safetensors"))?;
        Self::build(bridge, config, &weights, rotation, capacity)
    }

    /// A model of `config` (a `config.json`'s contents) with random weights, for timing.
    pub fn random(
        bridge: &BurnPosEnc,
        config: &Value,
        rotation: Rotation,
        capacity: usize,
    ) -> Result<Self> {
        let config = Config::from_json(config)?;
        // The same weights for both rotations and from run to run (burn's generator is the
        // process's: where nothing else draws from it meanwhile): timings of one model.
        bridge.device().seed(0x5eed);
        let weights = Weights::Random {
            norm_base: norm::neutral(config.norm_weight),
        };
        Self::build(bridge, config, &weights, rotation, capacity)
    }

    fn build(
        bridge: &BurnPosEnc,
        config: Config,
        w: &Weights,
        rotation: Rotation,
        capacity: usize,
    ) -> Result<Self> {
        let device = bridge.device();
        let c = &config;
        let rotators = Rotator::per_type(bridge, c, rotation, capacity)?;
        let mut layers = Vec::with_capacity(c.layers);
        for i in 0..c.layers {
            let rotator = rotators[c.rope.layers[i]].clone();
            layers.push(Layer::new(w, c, i, rotator, capacity, device)?);
        }
        let embed = w.embedding("model.embed_tokens.weight", c.vocab, c.hidden, device)?;
        let tied = match w {
            Weights::File(_) => !w.has("lm_head.weight"),
            Weights::Random { .. } => c.tie_embeddings,
        };
        let lm_head = if tied {
            linear_of(embed.weight.val(), device)
        } else {
            w.linear(&[("lm_head", c.vocab)], c.hidden, device)?
        };
        let norm = RmsNorm::new(
            &w.host("model.norm.weight", &[c.hidden])?,
            c.norm_weight,
            c.eps,
            device,
        );
        Ok(Self {
            config,
            bridge: bridge.clone(),
            embed,
            layers,
            norm,
            lm_head,
            len: 0,
            capacity,
        })
    }

    /// Forgets the cached tokens (the caches are overwritten from position 0).
    pub fn reset(&mut self) {
        self.len = 0;
    }

    /// Runs `ids` at the next positions; returns the logits `[vocab]` of the last one.
    pub fn forward(&mut self, ids: &[u32]) -> Result<Tensor<1>> {
        let (start, tokens) = (self.len, ids.len());
        if start + tokens > self.capacity {
            return Err(format!(
                "{} tokens pass the caches' {}",
                start + tokens,
                self.capacity
            )
            .into());
        }
        let device = self.bridge.device().clone();
        let ids = Tensor::<2, Int>::from_data(TensorData::new(ids.to_vec(), [1, tokens]), &device);
        let mut x = self.embed.forward(ids);
        if let Some(s) = self.config.embed_scale {
            x = x.mul_scalar(s);
        }
        // One mask per window (full layers, sliding ones), shared by the layers.
        let mut masks: Vec<(Option<usize>, Option<Tensor<4>>)> = Vec::new();
        for layer in &mut self.layers {
            let m = match masks.iter().find(|(w, _)| *w == layer.window) {
                Some((_, m)) => m.clone(),
                None => {
                    let m = mask(tokens, start, layer.window, &device);
                    masks.push((layer.window, m.clone()));
                    m
                }
            };
            x = layer.forward(&self.bridge, x, start, m)?;
        }
        self.len += tokens;
        let last = self.norm.forward(x.narrow(1, tokens - 1, 1));
        let mut logits = self.lm_head.forward(last).reshape([self.config.vocab]);
        if let Some(c) = self.config.final_softcap {
            logits = logits.div_scalar(c).tanh().mul_scalar(c);
        }
        Ok(logits)
    }
}

/// Greedy decoding: prefills `prompt`, then feeds back each chosen token until `steps`
/// tokens are chosen. `pick` sees each step's logits and returns the token (reading it back
/// from the device, which is the step's sync).
pub fn greedy(
    model: &mut Model,
    prompt: &[u32],
    steps: usize,
    mut pick: impl FnMut(usize, Tensor<1>) -> Result<u32>,
) -> Result<Vec<u32>> {
    let mut tokens = Vec::with_capacity(steps);
    let mut logits = model.forward(prompt)?;
    for step in 0..steps {
        let token = pick(step, logits)?;
        tokens.push(token);
        if step + 1 == steps {
            break;
        }
        logits = model.forward(&[token])?;
    }
    Ok(tokens)
}

/// The first index of the largest logit (PyTorch's `argmax`).
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &v) in logits.iter().enumerate() {
        if v > logits[best] {
            best = i;
        }
    }
    best as u32
}

/// The token of the largest logit, chosen on the device: only the index is read back.
pub fn argmax_on_device(logits: Tensor<1>) -> Result<u32> {
    let data = logits.argmax(0).into_data();
    let id = data.iter::<i64>().next().ok_or("an empty argmax")?;
    Ok(u32::try_from(id)?)
}
