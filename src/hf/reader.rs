//! The generic part of reading a text config: the rope parameter dict, base, head_dim,
//! layer count, rope type and scaling, as transformers' common pipeline
//! (`modeling_rope_utils.py`) reads them.

use serde_json::Value;

use super::Obj;
use super::json::{f64_or, factor_list, invalid, opt_f64, opt_u64};
use crate::frequencies::{
    FrequencyError, Llama3, LongRope, Scaling, Yarn, longrope_attention_factor,
};

/// The text config being read.
pub(super) struct Reader<'a> {
    pub(super) text: &'a Obj,
}

static EMPTY: std::sync::LazyLock<Obj> = std::sync::LazyLock::new(Obj::new);

impl<'a> Reader<'a> {
    /// `rope_scaling` when it is a non-empty object, else `rope_parameters`, else `{}`.
    pub(super) fn rope_dict(&self) -> Result<&'a Obj, FrequencyError> {
        match self.text.get("rope_scaling") {
            Some(Value::Object(o)) if !o.is_empty() => return Ok(o),
            None | Some(Value::Null) | Some(Value::Object(_)) => {}
            Some(v) => return Err(invalid("rope_scaling", "an object", v)),
        }
        match self.text.get("rope_parameters") {
            Some(Value::Object(o)) => Ok(o),
            None | Some(Value::Null) => Ok(&EMPTY),
            Some(v) => Err(invalid("rope_parameters", "an object", v)),
        }
    }

    /// The dict's `rope_theta`, else the top-level one, else the class default.
    pub(super) fn theta(&self, dict: &Obj, default: f64) -> Result<f64, FrequencyError> {
        Ok(match opt_f64(dict, "rope_theta")? {
            Some(t) => t,
            None => opt_f64(self.text, "rope_theta")?.unwrap_or(default),
        })
    }

    pub(super) fn max_pos(&self) -> Result<Option<u64>, FrequencyError> {
        opt_u64(self.text, "max_position_embeddings")
    }

    /// `head_dim` when given (and not null), else `hidden_size / num_attention_heads`, else
    /// the class default.
    pub(super) fn head_dim(&self, default: Option<u64>) -> Result<u64, FrequencyError> {
        if let Some(d) = opt_u64(self.text, "head_dim")? {
            return Ok(d);
        }
        let hidden = opt_u64(self.text, "hidden_size")?;
        let heads = opt_u64(self.text, "num_attention_heads")?;
        match (hidden, heads, default) {
            (Some(h), Some(n), _) if n > 0 => Ok(h / n),
            (_, _, Some(d)) => Ok(d),
            _ => Err(FrequencyError::MissingConfigKey {
                key: "head_dim (or hidden_size and num_attention_heads)",
                rope_type: "any".into(),
            }),
        }
    }

    pub(super) fn num_layers(&self, default: Option<u64>) -> Result<u64, FrequencyError> {
        Ok(opt_u64(self.text, "num_hidden_layers")?
            .or(default)
            .unwrap_or(0))
    }

    /// The rope type of a dict: `rope_type`, else the legacy `type`, else `"default"`.
    pub(super) fn rope_type(dict: &Obj) -> Result<String, FrequencyError> {
        for key in ["rope_type", "type"] {
            match dict.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) => return Ok(s.clone()),
                Some(v) => return Err(invalid(key, "a string", v)),
            }
        }
        Ok("default".into())
    }

    /// The scaling of `dict`; `original` overrides where a family fixes the original length
    /// (Phi-3). Returns it with its rope type.
    pub(super) fn scaling(
        &self,
        dict: &Obj,
        original_override: Option<u64>,
    ) -> Result<(Scaling, String), FrequencyError> {
        if !dict.is_empty() && dict.values().all(|v| v.is_object() || v.is_null()) {
            // One dict per layer type: only the families that have them read them.
            return Err(FrequencyError::PerLayerRopeParameters {
                layer_types: dict.keys().cloned().collect::<Vec<_>>().join(", "),
            });
        }
        let d = DictRead {
            text: self.text,
            dict,
            rope_type: Self::rope_type(dict)?,
            original_override,
            max_pos: self.max_pos()?,
        };
        let scaling = match d.rope_type.as_str() {
            "default" => Scaling::Default,
            "linear" => Scaling::Linear {
                factor: d.req("factor")?,
            },
            "dynamic" => Scaling::DynamicNtk {
                factor: d.req("factor")?,
                original_max_position_embeddings: d.need_max()?,
            },
            "yarn" => d.yarn()?,
            "llama3" => Scaling::Llama3(Llama3 {
                factor: d.req("factor")?,
                low_freq_factor: d.req("low_freq_factor")?,
                high_freq_factor: d.req("high_freq_factor")?,
                original_max_position_embeddings: d.original()?,
            }),
            // "su": Phi-3's legacy name (see `phi3` for what HF 5.x accepts of it).
            "longrope" | "su" => d.longrope()?,
            "proportional" => Scaling::Proportional {
                partial_rotary_factor: opt_f64(dict, "partial_rotary_factor")?.unwrap_or(1.0),
                factor: opt_f64(dict, "factor")?.unwrap_or(1.0),
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
    ) -> Result<Vec<usize>, FrequencyError> {
        if let Some(Value::Array(a)) = self.text.get("layer_types") {
            return a
                .iter()
                .map(|t| match t.as_str() {
                    Some("sliding_attention") => Ok(0),
                    Some("full_attention") => Ok(1),
                    _ => Err(invalid(
                        "layer_types",
                        "sliding_attention or full_attention",
                        t,
                    )),
                })
                .collect();
        }
        let n = self.num_layers(default_layers)?;
        let pattern = opt_u64(self.text, "sliding_window_pattern")?
            .unwrap_or(6)
            .max(1);
        Ok((0..n)
            .map(|i| usize::from((i + 1).is_multiple_of(pattern) || (last_full && i + 1 == n)))
            .collect())
    }
}

/// One rope parameter dict being read for its scaling.
struct DictRead<'a> {
    text: &'a Obj,
    dict: &'a Obj,
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

    fn req(&self, key: &'static str) -> Result<f64, FrequencyError> {
        opt_f64(self.dict, key)?.ok_or_else(|| self.missing(key))
    }

    fn need_max(&self) -> Result<u64, FrequencyError> {
        self.max_pos
            .ok_or_else(|| self.missing("max_position_embeddings"))
    }

    /// `original_max_position_embeddings`: the family's, else a top-level key (which HF's
    /// second standardization copies over the dict's), else the dict's, else
    /// `max_position_embeddings`.
    fn original(&self) -> Result<u64, FrequencyError> {
        if let Some(o) = self.original_override {
            return Ok(o);
        }
        if let Some(o) = opt_u64(self.text, "original_max_position_embeddings")? {
            return Ok(o);
        }
        if let Some(o) = opt_u64(self.dict, "original_max_position_embeddings")? {
            return Ok(o);
        }
        self.max_pos
            .ok_or_else(|| self.missing("original_max_position_embeddings"))
    }

    /// YaRN: HF 5.x requires a `factor` key (validate_rope raises KeyError without it); a
    /// null one means max / original. Betas 32 / 1 when absent, 0 or null; `truncate`
    /// true when absent, false when null.
    fn yarn(&self) -> Result<Scaling, FrequencyError> {
        let orig = self.original()?;
        let factor = match self.dict.get("factor") {
            None => return Err(self.missing("factor")),
            Some(Value::Null) => {
                if orig == 0 {
                    return Err(FrequencyError::ZeroContextLength {
                        scaling: "YaRN",
                        name: "original_max_position_embeddings",
                    });
                }
                self.need_max()? as f64 / orig as f64
            }
            Some(_) => self.req("factor")?,
        };
        let truncate = match self.dict.get("truncate") {
            None => true,
            Some(Value::Bool(b)) => *b,
            Some(Value::Null) => false,
            Some(v) => return Err(invalid("truncate", "a boolean", v)),
        };
        Ok(Scaling::Yarn(Yarn {
            factor,
            original_max_position_embeddings: orig,
            beta_fast: f64_or(self.dict, "beta_fast", 32.0)?,
            beta_slow: f64_or(self.dict, "beta_slow", 1.0)?,
            mscale: opt_f64(self.dict, "mscale")?.unwrap_or(0.0),
            mscale_all_dim: opt_f64(self.dict, "mscale_all_dim")?.unwrap_or(0.0),
            attention_factor: opt_f64(self.dict, "attention_factor")?,
            truncate,
        }))
    }

    /// LongRoPE: the attention factor from the dict's `factor`, else max / original,
    /// computed once for short and long factors alike (HF).
    fn longrope(&self) -> Result<Scaling, FrequencyError> {
        let orig = self.original()?;
        let max = self.need_max()?;
        let attention_factor = match opt_f64(self.dict, "attention_factor")? {
            Some(a) => a,
            None => {
                let factor = match opt_f64(self.dict, "factor")? {
                    Some(f) => f,
                    None => max as f64 / orig as f64,
                };
                longrope_attention_factor(factor, orig)
            }
        };
        let rt = self.rope_type.as_str();
        Ok(Scaling::LongRope(LongRope {
            short_factor: factor_list(self.dict, "short_factor", rt)?,
            long_factor: factor_list(self.dict, "long_factor", rt)?,
            original_max_position_embeddings: orig,
            max_position_embeddings: max,
            attention_factor: Some(attention_factor),
        }))
    }
}
