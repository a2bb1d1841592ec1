//! The generic part of reading a text config: the rope parameter dict, base, head_dim,
//! layer count, rope type and scaling, as transformers' common pipeline
//! (`modeling_rope_utils.py`) reads them.

use serde_json::Value;

use super::HfRope;
use super::config::{Obj, RopeDict, TextConfig, parse};
use crate::frequencies::{
    FrequencyError, Llama3, LongRope, Scaling, Yarn, longrope_attention_factor,
};

/// The text config being read.
pub(super) struct Reader<'a> {
    pub(super) text: &'a TextConfig,
    /// The family's default `num_hidden_layers`.
    pub(super) default_layers: u64,
}

/// The `layer_types` entries transformers 5.24 accepts (`ALLOWED_ATTN_LAYER_TYPES`), and the
/// legacy names it renames to them (`_LEGACY_LAYER_TYPE_REMAP`); any other name fails its
/// config's validation. `tests/hf_layers.rs` checks both against transformers' answers.
const LAYER_TYPES: [&str; 14] = [
    "full_attention",
    "sliding_attention",
    "chunked_attention",
    "window_attention",
    "indexed_attention",
    "compressed_sparse_attention",
    "heavily_compressed_attention",
    "minimax_m3_sparse",
    "conv",
    "moe",
    "hybrid",
    "hybrid_sliding",
    "reference_sliding_attention",
    "linear_attention",
];
const LEGACY_LAYER_TYPES: [(&str, &str); 4] = [
    ("mamba", "linear_attention"),
    ("attention", "full_attention"),
    ("deepseek_sparse_attention", "indexed_attention"),
    ("qwen_sparse_attention", "indexed_attention"),
];

/// A `layer_types` entry as transformers reads it: its name after the legacy renaming, or
/// `None` when transformers refuses it.
fn layer_type(name: &str) -> Option<&'static str> {
    LAYER_TYPES
        .iter()
        .find(|&&t| t == name)
        .copied()
        .or_else(|| {
            LEGACY_LAYER_TYPES
                .iter()
                .find(|(old, _)| *old == name)
                .map(|(_, new)| *new)
        })
}

impl Reader<'_> {
    /// The raw parameter dict and its key: `rope_scaling` when it is a non-empty object,
    /// else `rope_parameters`; `None` when neither is there.
    pub(super) fn rope_map(&self) -> Option<(&Obj, &'static str)> {
        match (&self.text.rope_scaling, &self.text.rope_parameters) {
            (Some(s), _) if !s.is_empty() => Some((s, "rope_scaling")),
            (_, Some(p)) => Some((p, "rope_parameters")),
            _ => None,
        }
    }

    /// The parameter dict (see [`Reader::rope_map`]; empty when there is none). One dict per
    /// layer type is an error: only the families that have them read them.
    pub(super) fn rope_dict(&self) -> Result<RopeDict, FrequencyError> {
        let Some((map, key)) = self.rope_map() else {
            return Ok(RopeDict::default());
        };
        if !map.is_empty() && map.values().all(|v| v.is_object() || v.is_null()) {
            return Err(FrequencyError::PerLayerRopeParameters {
                layer_types: map.keys().cloned().collect::<Vec<_>>().join(", "),
            });
        }
        parse(Value::Object(map.clone()), key)
    }

    /// The dict's `rope_theta`, else the top-level one, else the class default.
    pub(super) fn theta(&self, dict: &RopeDict, default: f64) -> f64 {
        dict.rope_theta.or(self.text.rope_theta).unwrap_or(default)
    }

    /// The dict's `partial_rotary_factor`, else the top-level one (HF's `setdefault`).
    pub(super) fn partial_rotary_factor(&self, dict: &RopeDict) -> Option<f64> {
        dict.partial_rotary_factor
            .or(self.text.partial_rotary_factor)
    }

    fn max_pos(&self) -> Option<u64> {
        self.text.max_position_embeddings.map(|w| w.0)
    }

    /// `head_dim` when given (and not null), else `hidden_size / num_attention_heads`, else
    /// the class default.
    pub(super) fn head_dim(&self, default: Option<u64>) -> Result<u64, FrequencyError> {
        let t = self.text;
        match (t.head_dim, t.hidden_size, t.num_attention_heads, default) {
            (Some(d), ..) => Ok(d.0),
            (None, Some(h), Some(n), _) if n.0 > 0 => Ok(h.0 / n.0),
            (.., Some(d)) => Ok(d),
            _ => Err(FrequencyError::MissingConfigKey {
                key: "head_dim (or hidden_size and num_attention_heads)",
                rope_type: "any".into(),
            }),
        }
    }

    /// `num_hidden_layers` (GPT-J's `n_layer`), else the family's default; at most
    /// [`HfRope::MAX_LAYERS`].
    pub(super) fn num_layers(&self) -> Result<u64, FrequencyError> {
        let t = self.text;
        let n = t
            .num_hidden_layers
            .or(t.n_layer)
            .map_or(self.default_layers, |w| w.0);
        if n > HfRope::MAX_LAYERS {
            return Err(FrequencyError::InvalidConfigValue {
                key: "num_hidden_layers".into(),
                expected: "at most HfRope::MAX_LAYERS (65536) layers",
                found: n.to_string(),
            });
        }
        Ok(n)
    }

    /// `layer_types` as transformers' config validation takes them: every entry a name it
    /// accepts, as many as the layers. Returns them renamed as it renames them.
    pub(super) fn check_layer_types(&self) -> Result<Option<Vec<&'static str>>, FrequencyError> {
        let Some(kinds) = &self.text.layer_types else {
            return Ok(None);
        };
        let names = kinds
            .iter()
            .enumerate()
            .map(|(i, k)| {
                layer_type(k).ok_or_else(|| FrequencyError::InvalidConfigValue {
                    key: format!("layer_types[{i}]"),
                    expected: "a layer type transformers 5.x accepts (full_attention, \
                               sliding_attention, chunked_attention, linear_attention, ...)",
                    found: format!("{k:?}"),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let n = self.num_layers()?;
        if names.len() as u64 != n {
            return Err(FrequencyError::InvalidConfigValue {
                key: "layer_types".into(),
                expected: "one entry per layer (num_hidden_layers, else the family's default)",
                found: format!("{} entries for {n} layers", names.len()),
            });
        }
        Ok(Some(names))
    }

    /// A model whose layers all rotate alike.
    pub(super) fn uniform(
        &self,
        model_type: String,
        rope: super::LayerRope,
    ) -> crate::error::Result<HfRope> {
        Ok(HfRope {
            model_type,
            layer_types: vec![("full_attention".into(), Some(rope))],
            layers: vec![0; self.num_layers()? as usize],
            qk_norm: None,
        })
    }

    /// The scaling of `dict`; `original` overrides where a family fixes the original length
    /// (Phi-3). Returns it with its rope type.
    pub(super) fn scaling(
        &self,
        dict: &RopeDict,
        original_override: Option<u64>,
    ) -> Result<(Scaling, String), FrequencyError> {
        let d = DictRead {
            text: self.text,
            dict,
            rope_type: dict.kind().to_string(),
            original_override,
            max_pos: self.max_pos(),
        };
        let scaling = match d.rope_type.as_str() {
            "default" => Scaling::Default,
            "linear" => Scaling::Linear {
                factor: d.req(dict.factor(), "factor")?,
            },
            "dynamic" => Scaling::DynamicNtk {
                factor: d.req(dict.factor(), "factor")?,
                original_max_position_embeddings: d.need_max()?,
            },
            "yarn" => d.yarn()?,
            "llama3" => Scaling::Llama3(Llama3 {
                factor: d.req(dict.factor(), "factor")?,
                low_freq_factor: d.req(dict.low_freq_factor, "low_freq_factor")?,
                high_freq_factor: d.req(dict.high_freq_factor, "high_freq_factor")?,
                original_max_position_embeddings: d.original()?,
            }),
            // "su": Phi-3's legacy name (see `phi3` for what HF 5.x accepts of it).
            "longrope" | "su" => d.longrope()?,
            "proportional" => Scaling::Proportional {
                partial_rotary_factor: dict.partial_rotary_factor.unwrap_or(1.0),
                factor: dict.factor().unwrap_or(1.0),
            },
            _ => {
                return Err(FrequencyError::UnsupportedRopeType {
                    rope_type: d.rope_type,
                });
            }
        };
        scaling.validate()?;
        Ok((scaling, d.rope_type))
    }

    /// Per layer, 0 for `sliding_attention` and 1 for `full_attention`: the config's
    /// `layer_types` (any other kind is refused: `family` has RoPE parameters for these two
    /// only), else every `sliding_window_pattern`-th layer (default 6) global, and with
    /// `last_full` the last one too (Gemma 4).
    pub(super) fn sliding_or_full(
        &self,
        family: &'static str,
        last_full: bool,
    ) -> Result<Vec<usize>, FrequencyError> {
        if let Some(kinds) = self.check_layer_types()? {
            return kinds
                .iter()
                .enumerate()
                .map(|(i, &k)| match k {
                    "sliding_attention" => Ok(0),
                    "full_attention" => Ok(1),
                    _ => Err(FrequencyError::InvalidConfigValue {
                        key: format!("layer_types[{i}]"),
                        expected: family,
                        found: format!("{k:?}"),
                    }),
                })
                .collect();
        }
        let n = self.num_layers()?;
        let pattern = self
            .text
            .sliding_window_pattern
            .as_ref()
            .and_then(|p| p.every())
            .unwrap_or(6)
            .max(1);
        Ok((0..n)
            .map(|i| usize::from((i + 1).is_multiple_of(pattern) || (last_full && i + 1 == n)))
            .collect())
    }
}

/// One rope parameter dict being read for its scaling.
struct DictRead<'a> {
    text: &'a TextConfig,
    dict: &'a RopeDict,
    rope_type: String,
    /// A family's fixed original length (Phi-3's class field).
    original_override: Option<u64>,
    max_pos: Option<u64>,
}

impl DictRead<'_> {
    fn missing(&self, key: &'static str) -> FrequencyError {
        FrequencyError::MissingConfigKey {
            key,
            rope_type: self.rope_type.clone(),
        }
    }

    /// `value`, which the rope type needs under the name `key`.
    fn req(&self, value: Option<f64>, key: &'static str) -> Result<f64, FrequencyError> {
        value.ok_or_else(|| self.missing(key))
    }

    fn need_max(&self) -> Result<u64, FrequencyError> {
        self.max_pos
            .ok_or_else(|| self.missing("max_position_embeddings"))
    }

    /// `original_max_position_embeddings`: the family's, else a top-level key (which HF's
    /// second standardization copies over the dict's), else the dict's, else
    /// `max_position_embeddings`.
    fn original(&self) -> Result<u64, FrequencyError> {
        self.original_override
            .or(self.text.original_max_position_embeddings.map(|w| w.0))
            .or(self.dict.original_max_position_embeddings.map(|w| w.0))
            .or(self.max_pos)
            .ok_or_else(|| self.missing("original_max_position_embeddings"))
    }

    /// YaRN: HF 5.x requires a `factor` key (validate_rope raises KeyError without it); a
    /// null one means max / original. Betas 32 / 1 when absent, 0 or null (HF's
    /// `x or default`); `truncate` true when absent, false when null.
    fn yarn(&self) -> Result<Scaling, FrequencyError> {
        let orig = self.original()?;
        let factor = match self.dict.factor {
            None => return Err(self.missing("factor")),
            Some(Some(f)) => f,
            Some(None) if orig == 0 => {
                return Err(FrequencyError::ZeroContextLength {
                    scaling: "YaRN",
                    name: "original_max_position_embeddings",
                });
            }
            Some(None) => self.need_max()? as f64 / orig as f64,
        };
        let or = |v: Option<f64>, default: f64| v.filter(|&x| x != 0.0).unwrap_or(default);
        Ok(Scaling::Yarn(Yarn {
            factor,
            original_max_position_embeddings: orig,
            beta_fast: or(self.dict.beta_fast, 32.0),
            beta_slow: or(self.dict.beta_slow, 1.0),
            mscale: self.dict.mscale.unwrap_or(0.0),
            mscale_all_dim: self.dict.mscale_all_dim.unwrap_or(0.0),
            attention_factor: self.dict.attention_factor,
            truncate: self.dict.truncate.is_none_or(|t| t.unwrap_or(false)),
        }))
    }

    /// LongRoPE: the attention factor from the dict's `factor`, else max / original,
    /// computed once for short and long factors alike (HF).
    fn longrope(&self) -> Result<Scaling, FrequencyError> {
        let orig = self.original()?;
        let max = self.need_max()?;
        let attention_factor = match self.dict.attention_factor {
            Some(a) => a,
            None => {
                let factor = self.dict.factor().unwrap_or(max as f64 / orig as f64);
                longrope_attention_factor(factor, orig)
            }
        };
        let list = |v: &Option<Vec<f64>>, key| v.clone().ok_or_else(|| self.missing(key));
        Ok(Scaling::LongRope(LongRope {
            short_factor: list(&self.dict.short_factor, "short_factor")?,
            long_factor: list(&self.dict.long_factor, "long_factor")?,
            original_max_position_embeddings: orig,
            max_position_embeddings: max,
            attention_factor: Some(attention_factor),
        }))
    }
}
