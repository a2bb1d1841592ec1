//! The keys of `config.json` that transformers reads for RoPE, as typed structs (serde
//! derive). Where HF tells a missing key from a `null` one, the field is
//! `Option<Option<T>>` (outer `None`: absent); every other `null` reads as absent. A value
//! of the wrong JSON type is [`FrequencyError::ConfigKeyType`] naming the key's path.

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, de};
use serde_json::{Map, Value};

use crate::frequencies::FrequencyError;

/// A JSON object as read.
pub(super) type Obj = Map<String, Value>;

/// Reads `value` (found at `path`) as a `T`.
pub(super) fn parse<T: DeserializeOwned>(value: Value, path: &str) -> Result<T, FrequencyError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let key = match (path, inner.as_str()) {
            (p, ".") => p.to_string(),
            ("", i) => i.to_string(),
            (p, i) => format!("{p}.{i}"),
        };
        FrequencyError::ConfigKeyType {
            key,
            message: e.into_inner().to_string(),
        }
    })
}

/// A whole number as config files write them: `4096` or `4096.0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Whole(pub u64);

impl<'de> Deserialize<'de> for Whole {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = serde_json::Number::deserialize(d)?;
        if let Some(u) = n.as_u64() {
            return Ok(Whole(u));
        }
        match n.as_f64() {
            Some(x) if x >= 0.0 && x.fract() == 0.0 && x < 1.8e19 => Ok(Whole(x as u64)),
            _ => Err(de::Error::custom(format!(
                "expected a non-negative whole number, found {n}"
            ))),
        }
    }
}

/// Wraps a present value (`null` included) in `Some`, so that an absent key stays `None`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// The top level of `config.json`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct TopConfig {
    pub model_type: Option<String>,
    /// The language model's config in multimodal files (type-checked here; found by
    /// `text_key` with the other names of a language model's sub-config).
    pub text_config: Option<Obj>,
    pub decoder: Option<Obj>,
    pub generator: Option<Obj>,
    pub decoder_config: Option<Obj>,
}

/// The text config: every key a family's configuration class reads for RoPE.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct TextConfig {
    pub model_type: Option<String>,
    pub rope_theta: Option<f64>,
    /// The 4.x parameter dict (an object or null).
    pub rope_scaling: Option<Obj>,
    /// The 5.x parameter dict, or one dict per layer type.
    pub rope_parameters: Option<Obj>,
    pub partial_rotary_factor: Option<f64>,
    pub head_dim: Option<Whole>,
    pub hidden_size: Option<Whole>,
    pub num_attention_heads: Option<Whole>,
    pub num_hidden_layers: Option<Whole>,
    /// GPT-J's name of `num_hidden_layers`.
    pub n_layer: Option<Whole>,
    pub max_position_embeddings: Option<Whole>,
    pub original_max_position_embeddings: Option<Whole>,
    /// GPT-NeoX.
    pub rotary_emb_base: Option<f64>,
    pub rotary_pct: Option<f64>,
    /// GPT-J (`rotary_dim: null` is not the default 64 there).
    pub n_embd: Option<Whole>,
    pub n_head: Option<Whole>,
    #[serde(deserialize_with = "present")]
    pub rotary_dim: Option<Option<Whole>>,
    /// DeepSeek.
    pub qk_rope_head_dim: Option<Whole>,
    pub rope_interleave: Option<bool>,
    /// Llama 4: per layer, a truthy value means the layer has RoPE.
    pub no_rope_layers: Option<Vec<Value>>,
    pub no_rope_layer_interval: Option<Whole>,
    /// Gemma.
    pub rope_local_base_freq: Option<f64>,
    pub global_head_dim: Option<Whole>,
    /// Each layer's attention kind, as transformers names them.
    pub layer_types: Option<Vec<String>>,
    pub sliding_window_pattern: Option<Pattern>,
    /// The attention window (`null`: none; EXAONE 4 then rotates every layer).
    #[serde(deserialize_with = "present")]
    pub sliding_window: Option<Option<Whole>>,
    /// RecurrentGemma's repeating block pattern (`recurrent` / `attention`).
    pub block_types: Option<Vec<String>>,
    /// Per-layer overrides (`{"05": {"head_dim": 512}}`).
    pub per_layer_config: Option<Obj>,
    /// Mllama's cross-attention layers (no RoPE).
    pub cross_attention_layers: Option<Vec<Whole>>,
    /// Bamba's attention layers (the others are Mamba layers; none listed: none).
    #[serde(deserialize_with = "present")]
    pub attn_layer_indices: Option<Option<Vec<Whole>>>,
    /// The epsilon of the model's RMS norms (Qwen3 and Gemma 3 QK-norm).
    pub rms_norm_eps: Option<f64>,
}

/// `sliding_window_pattern`: every n-th layer global (Gemma, Cohere 2), or EXAONE 4's
/// letters (`"LLLG"`), which transformers only reads with `layer_types` beside them.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum Pattern {
    Every(Whole),
    Letters(String),
}

impl Pattern {
    /// The period, where it is a number.
    pub(super) fn every(&self) -> Option<u64> {
        match self {
            Pattern::Every(w) => Some(w.0),
            Pattern::Letters(_) => None,
        }
    }
}

/// One rope parameter dict (`rope_scaling`, `rope_parameters`, or one layer type's).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct RopeDict {
    pub rope_type: Option<String>,
    /// The legacy name of `rope_type`.
    #[serde(rename = "type")]
    pub legacy_type: Option<String>,
    pub rope_theta: Option<f64>,
    pub partial_rotary_factor: Option<f64>,
    /// YaRN tells a missing factor (an error in HF) from a null one (max / original).
    #[serde(deserialize_with = "present")]
    pub factor: Option<Option<f64>>,
    pub original_max_position_embeddings: Option<Whole>,
    pub low_freq_factor: Option<f64>,
    pub high_freq_factor: Option<f64>,
    pub beta_fast: Option<f64>,
    pub beta_slow: Option<f64>,
    pub mscale: Option<f64>,
    pub mscale_all_dim: Option<f64>,
    pub attention_factor: Option<f64>,
    /// YaRN: absent means true, null false.
    #[serde(deserialize_with = "present")]
    pub truncate: Option<Option<bool>>,
    pub short_factor: Option<Vec<f64>>,
    pub long_factor: Option<Vec<f64>>,
    pub mrope_section: Option<[Whole; 3]>,
}

impl RopeDict {
    /// A dict of `rope_type` with `rope_theta`: the defaults some families write in code.
    pub(super) fn of_type(rope_type: &str, rope_theta: f64) -> Self {
        Self {
            rope_type: Some(rope_type.into()),
            rope_theta: Some(rope_theta),
            ..Self::default()
        }
    }

    /// `rope_type`, else the legacy `type`, else `"default"`.
    pub(super) fn kind(&self) -> &str {
        self.rope_type
            .as_deref()
            .or(self.legacy_type.as_deref())
            .unwrap_or("default")
    }

    /// The factor, `None` when absent or null.
    pub(super) fn factor(&self) -> Option<f64> {
        self.factor.flatten()
    }
}

/// Python truthiness of a config value, the way HF's `if x` reads it.
pub(super) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// The JSON type of `v`, for errors.
pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
