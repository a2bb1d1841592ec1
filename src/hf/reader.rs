//! The generic part of reading a text config: the rope parameter dict, base, head_dim,
//! layer count, rope type and scaling, as transformers' common pipeline
//! (`modeling_rope_utils.py`) reads them.

use serde_json::Value;

use super::config::{LayerKind, Obj, RopeDict, TextConfig, parse};
use crate::frequencies::{
    FrequencyError, Llama3, LongRope, Scaling, Yarn, longrope_attention_factor,
};

/// The text config being read.
pub(super) struct Reader<'a> {
    pub(super) text: &'a TextConfig,
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

    pub(super) fn num_layers(&self, default: Option<u64>) -> u64 {
        self.text
            .num_hidden_layers
            .map(|w| w.0)
            .or(default)
            .unwrap_or(0)
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
    /// `layer_types`, else every `sliding_window_pattern`-th layer (default 6) global, and
    /// with `last_full` the last one too (Gemma 4).
    pub(super) fn sliding_or_full(
        &self,
        default_layers: Option<u64>,
        last_full: bool,
    ) -> Vec<usize> {
        if let Some(kinds) = &self.text.layer_types {
            return kinds
                .iter()
                .map(|k| usize::from(*k == LayerKind::FullAttention))
                .collect();
        }
        let n = self.num_layers(default_layers);
        let pattern = self.text.sliding_window_pattern.map_or(6, |w| w.0).max(1);
        (0..n)
            .map(|i| usize::from((i + 1).is_multiple_of(pattern) || (last_full && i + 1 == n)))
            .collect()
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
