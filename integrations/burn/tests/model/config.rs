//! What the model code needs of an HF `config.json`, per family: the dimensions, the norms'
//! weighting, the activation, Gemma 3's extra scalings and each layer's attention window. The
//! RoPE itself is never read here: it is the crate's `HfRope`, read from the same file.

use serde_json::{Value, json};
use wgpu_posenc::{HfRope, NormWeight};

use super::Result;

/// The families the model code runs, each the HF modeling code of the same name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `Qwen3ForCausalLM`: QK-norm `x * w`, SiLU.
    Qwen3,
    /// `LlamaForCausalLM`: no QK-norm, SiLU.
    Llama,
    /// `Gemma3ForCausalLM`: norms `x * (1 + w)`, scaled embeddings, sandwich norms, sliding
    /// layers, GELU (tanh), soft-capping.
    Gemma3,
}

/// The gated MLP's activation (HF's `ACT2FN` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// `silu`.
    Silu,
    /// `gelu_pytorch_tanh`.
    GeluTanh,
    /// `gelu` (erf).
    Gelu,
}

/// A model's shape and per-family switches, read from its `config.json`.
#[derive(Clone, Debug)]
pub struct Config {
    /// Which modeling code's switches apply.
    pub family: Family,
    /// `hidden_size`.
    pub hidden: usize,
    /// `num_hidden_layers`.
    pub layers: usize,
    /// `num_attention_heads`.
    pub q_heads: usize,
    /// `num_key_value_heads` (grouped-query attention where fewer than the Q heads).
    pub kv_heads: usize,
    /// `head_dim`, else `hidden_size / num_attention_heads` as HF falls back.
    pub head_dim: usize,
    /// `intermediate_size` of the gated MLP.
    pub intermediate: usize,
    /// `vocab_size`.
    pub vocab: usize,
    /// `rms_norm_eps`, of every RMS norm.
    pub eps: f64,
    /// How every RMS norm of the family weighs (the hidden norms and the QK-norm alike).
    pub norm_weight: NormWeight,
    pub activation: Activation,
    /// Multiplies Q·K (HF's `scaling`): `head_dim ** -0.5`, Gemma 3's
    /// `query_pre_attn_scalar ** -0.5`.
    pub attn_scale: f64,
    /// Gemma's embedding normalizer `sqrt(hidden_size)`, in f32 as HF casts it.
    pub embed_scale: Option<f32>,
    /// `attn_logit_softcapping`: scores become `c * tanh(s / c)` before the mask.
    pub attn_softcap: Option<f64>,
    /// `final_logit_softcapping`: the same on the logits.
    pub final_softcap: Option<f64>,
    /// Per layer: the keys a query sees, `Some(w)` for a sliding layer (positions
    /// `> q - w`, HF's `sliding_window_overlay`).
    pub windows: Vec<Option<usize>>,
    /// Whether the output projection is the embedding (used only where the weights do not
    /// say: random weights).
    pub tie_embeddings: bool,
    /// The RoPE of every layer and the QK-norm, from the crate's reader.
    pub rope: HfRope,
}

fn usize_key(c: &Value, key: &str) -> Result<usize> {
    c[key]
        .as_u64()
        .map(|v| v as usize)
        .ok_or_else(|| format!("config.json: {key} is missing or not a count").into())
}

fn f64_key(c: &Value, key: &str) -> Option<f64> {
    c[key].as_f64()
}

impl Config {
    /// Reads `config` (the parsed `config.json`) the way the family's HF modeling code does.
    pub fn from_json(config: &Value) -> Result<Self> {
        let model_type = config["model_type"]
            .as_str()
            .ok_or("config.json: model_type")?;
        let family = match model_type {
            "qwen3" => Family::Qwen3,
            "llama" => Family::Llama,
            "gemma3_text" => Family::Gemma3,
            other => return Err(format!("model_type {other:?}: not one this code runs").into()),
        };
        let hidden = usize_key(config, "hidden_size")?;
        let q_heads = usize_key(config, "num_attention_heads")?;
        let head_dim = match config["head_dim"].as_u64() {
            Some(d) => d as usize,
            None => hidden / q_heads,
        };
        let layers = usize_key(config, "num_hidden_layers")?;
        let gemma = family == Family::Gemma3;
        let act = config["hidden_activation"]
            .as_str()
            .or(config["hidden_act"].as_str())
            .unwrap_or(if gemma { "gelu_pytorch_tanh" } else { "silu" });
        let activation = match act {
            "silu" => Activation::Silu,
            "gelu_pytorch_tanh" => Activation::GeluTanh,
            "gelu" => Activation::Gelu,
            other => return Err(format!("activation {other:?}: not one this code runs").into()),
        };
        let attn_scale = match f64_key(config, "query_pre_attn_scalar") {
            Some(s) if gemma => s.powf(-0.5),
            _ => (head_dim as f64).powf(-0.5),
        };
        let rope = HfRope::from_config(config)?;
        Ok(Self {
            family,
            hidden,
            layers,
            q_heads,
            kv_heads: config["num_key_value_heads"]
                .as_u64()
                .map_or(q_heads, |v| v as usize),
            head_dim,
            intermediate: usize_key(config, "intermediate_size")?,
            vocab: usize_key(config, "vocab_size")?,
            eps: f64_key(config, "rms_norm_eps").unwrap_or(1e-6),
            norm_weight: if gemma {
                NormWeight::OnePlus
            } else {
                NormWeight::Scale
            },
            activation,
            attn_scale,
            embed_scale: gemma.then(|| (hidden as f64).sqrt() as f32),
            attn_softcap: f64_key(config, "attn_logit_softcapping"),
            final_softcap: f64_key(config, "final_logit_softcapping"),
            windows: windows(config, layers)?,
            tie_embeddings: config["tie_word_embeddings"].as_bool().unwrap_or(gemma),
            rope,
        })
    }

    /// Heads of the packed QKV projection.
    pub fn packed_heads(&self) -> usize {
        self.q_heads + 2 * self.kv_heads
    }
}

/// Each layer's window: HF's attention takes `sliding_window` only on a layer whose
/// `layer_types` entry is `sliding_attention` (a config without `layer_types` is all full).
fn windows(config: &Value, layers: usize) -> Result<Vec<Option<usize>>> {
    let Some(types) = config["layer_types"].as_array() else {
        return Ok(vec![None; layers]);
    };
    if types.len() != layers {
        return Err("config.json: layer_types is not one per layer".into());
    }
    let window = config["sliding_window"].as_u64().map(|w| w as usize);
    types
        .iter()
        .map(|t| match t.as_str() {
            Some("sliding_attention") => window
                .map(Some)
                .ok_or_else(|| "a sliding layer without sliding_window".into()),
            Some(_) => Ok(None),
            None => Err("config.json: layer_types holds a non-string".into()),
        })
        .collect()
}

/// A Qwen3 `config.json` with Qwen3-0.6B's attention and MLP dimensions (hidden 1024, 16 Q
/// heads, 8 KV heads of 128, intermediate 3072, theta 1e6) and the given depth and vocabulary:
/// the shape a side-by-side benchmark runs on random weights.
pub fn qwen3_06b_like(layers: usize, vocab: usize) -> Value {
    json!({
        "model_type": "qwen3",
        "hidden_size": 1024,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "intermediate_size": 3072,
        "num_hidden_layers": layers,
        "vocab_size": vocab,
        "rms_norm_eps": 1e-6,
        "hidden_act": "silu",
        "max_position_embeddings": 40960,
        "rope_theta": 1_000_000.0,
        "tie_word_embeddings": true,
    })
}
