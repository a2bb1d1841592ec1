//! Reading a model's HF transformers `config.json` the way transformers 5.x does (feature
//! `hf-config`): which sub-config holds the language model, which keys give the base, the
//! rotary width, the head dimension and the scaling, which pair layout the family's modeling
//! code rotates, and which layers have which RoPE (or none).
//!
//! The rules are transformers' code, family by family (`configuration_<family>.py`,
//! `modeling_rope_utils.py`, `modeling_<family>.py`, as of transformers 5.24); each is
//! written down in `tests/data/hf/README.md`, and `tests/hf_conformance.rs` checks every
//! fixture under `tests/data/hf/configs/` against rotations computed by transformers' own
//! rotary modules. A family this module does not know is an error, never a guess.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::frequencies::{FrequencyError, Scaling, longrope_attention_factor};
use crate::spec::{PairLayout, RopeSpec};

type Obj = Map<String, Value>;

/// The RoPE of one layer type of a model.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerRope {
    /// The spec, as HF's rotary module for this layer type computes it.
    pub spec: RopeSpec,
    /// The head dimension of the tensors it rotates (the view's last axis). DeepSeek-V2/V3
    /// rotate only the `qk_rope_head_dim` lanes at the end of each query head (`q_pe`) and
    /// the shared `k_pe`: this is their width.
    pub head_dim: u64,
}

/// The RoPE of every layer of a model, read from its `config.json`.
#[derive(Clone, Debug, PartialEq)]
pub struct HfRope {
    /// `model_type` of the language model (the text config's, for multimodal models).
    pub model_type: String,
    /// Each layer type and its RoPE (`None`: the layer type has no RoPE, e.g. Llama 4's
    /// NoPE layers). Names are HF's `layer_types` where the family has them
    /// (`"sliding_attention"`, `"full_attention"`); Llama 4's are `"rope"` and `"no_rope"`.
    pub layer_types: Vec<(String, Option<LayerRope>)>,
    /// For each layer `i`, the index of its type in `layer_types`.
    pub layers: Vec<usize>,
}

impl HfRope {
    /// Reads `config` (the contents of `config.json`) as transformers 5.x does. Needs the
    /// cargo feature `hf-config`.
    pub fn from_config(config: &Value) -> Result<Self> {
        let top = object(config)?;
        let model_type = str_key(top, "model_type")?
            .ok_or(FrequencyError::MissingConfigKey {
                key: "model_type",
                rope_type: "any".into(),
            })?
            .to_string();
        // The language model's config: `text_config` where there is one; Qwen2-VL files of
        // transformers 4.x are flat and build it from the top-level keys.
        let (text, text_type) = match top.get("text_config") {
            Some(Value::Object(t)) => {
                let own = str_key(t, "model_type")?.map(str::to_string);
                (t, own.unwrap_or_else(|| format!("{model_type}_text")))
            }
            _ => (top, model_type.clone()),
        };
        let family = text_type.strip_suffix("_text").unwrap_or(&text_type);
        let read = Reader { text };
        let rope = match family {
            "llama" | "mistral" | "mixtral" | "qwen2" | "qwen2_moe" | "qwen3" | "qwen3_moe" => {
                read.llama_like(10_000.0, PairLayout::HalfSplit)?
            }
            "llama4" => return read.llama4(text_type),
            "qwen2_vl" | "qwen2_5_vl" => read.qwen_vl(1e6, [16, 24, 24], false, None)?,
            "qwen3_vl" | "qwen3_vl_moe" => {
                read.qwen_vl(500_000.0, [24, 20, 20], true, Some(128))?
            }
            "phi3" => read.phi3()?,
            "gpt_neox" => read.gpt_neox()?,
            "gptj" => read.gptj()?,
            "deepseek_v2" => read.deepseek(false)?,
            "deepseek_v3" => read.deepseek(true)?,
            "gemma3" => return read.gemma3(text_type),
            "gemma4" => return read.gemma4(text_type),
            "gpt_oss" => read.gpt_oss()?,
            _ => {
                return Err(FrequencyError::UnsupportedModelType {
                    model_type: text_type,
                }
                .into());
            }
        };
        let layers = read.num_layers(None)?;
        Ok(Self {
            model_type: text_type,
            layer_types: vec![("full_attention".into(), Some(rope))],
            layers: vec![0; layers as usize],
        })
    }

    /// The RoPE of layer `layer`: `None` past the last layer or for a layer without RoPE.
    pub fn layer(&self, layer: usize) -> Option<&LayerRope> {
        let t = *self.layers.get(layer)?;
        self.layer_types[t].1.as_ref()
    }

    /// The RoPE of the layer type `name`.
    pub fn layer_type(&self, name: &str) -> Option<&LayerRope> {
        self.layer_types
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, r)| r.as_ref())
    }

    /// The one RoPE of a model whose layers all rotate alike; an error that names the layer
    /// types when they differ or some have none (then use [`HfRope::layer`]).
    pub fn only(&self) -> Result<&LayerRope> {
        let mut ropes = self.layer_types.iter().map(|(_, r)| r.as_ref());
        let first = ropes.next().flatten();
        match first {
            Some(f) if ropes.all(|r| r == Some(f)) => Ok(f),
            _ => Err(Error::PerLayerRope {
                model_type: self.model_type.clone(),
                layer_types: self
                    .layer_types
                    .iter()
                    .map(|(n, r)| {
                        if r.is_some() {
                            n.clone()
                        } else {
                            format!("{n} (no RoPE)")
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }
}

impl RopeSpec {
    /// The spec of a model from its HF transformers `config.json`, read as transformers 5.x
    /// reads it (see [`HfRope::from_config`]): base, rotary width, pair layout, scaling and
    /// M-RoPE sections of the model's family. `head_dim` is the last axis of the tensors you
    /// rotate; it must be the model's (an error says which it is).
    ///
    /// Models whose layers rotate differently (Gemma 3's local and global layers, Llama 4's
    /// NoPE layers) are an error here: [`HfRope::from_config`] gives each layer's spec.
    /// Needs the cargo feature `hf-config`.
    pub fn from_hf_config(config: &Value, head_dim: u64) -> Result<Self> {
        let rope = HfRope::from_config(config)?;
        let only = rope.only()?;
        if only.head_dim != head_dim {
            return Err(Error::HeadDimMismatch {
                model_type: rope.model_type.clone(),
                config: only.head_dim,
                given: head_dim,
            });
        }
        Ok(only.spec.clone())
    }
}

impl Scaling {
    /// Reads the rope parameters of an HF config the way transformers 5.x's common pipeline
    /// does (`convert_rope_params_to_dict`, `standardize_rope_params`): the scaling, the base
    /// (`rope_theta`, default 10000) and `partial_rotary_factor` (if any). Families with
    /// rules of their own (GPT-NeoX, Phi-3, Gemma 3, ...) are read by
    /// [`HfRope::from_config`]; prefer it, which knows the family from `model_type`. Needs
    /// the cargo feature `hf-config`.
    ///
    /// - the parameters come from `rope_scaling` when it is a non-empty object, else from
    ///   `rope_parameters`; the type from `rope_type`, else the legacy `type`;
    /// - `rope_theta` and `partial_rotary_factor` inside the parameters win over the
    ///   top-level keys (HF's `setdefault`);
    /// - YaRN, Llama 3 and LongRoPE take `original_max_position_embeddings` from the top
    ///   level when it is there, else from the parameters, else `max_position_embeddings`;
    /// - YaRN needs a `factor` key (a `null` one means `max_position_embeddings / original`);
    ///   `beta_fast` / `beta_slow` default to 32 / 1 (also when 0 or null); `truncate`
    ///   defaults to true (null is false); dynamic NTK's original length is
    ///   `max_position_embeddings`.
    pub fn from_hf_config(config: &Value) -> Result<(Scaling, f64, Option<f64>), FrequencyError> {
        let top = object(config).map_err(|_| FrequencyError::ConfigNotObject {
            found: kind(config),
        })?;
        let read = Reader { text: top };
        let dict = read.rope_dict()?;
        let theta = read.theta(dict, 10_000.0)?;
        let partial = match opt_f64(dict, "partial_rotary_factor")? {
            Some(p) => Some(p),
            None => opt_f64(top, "partial_rotary_factor")?,
        };
        let (scaling, _) = read.scaling(dict, None)?;
        Ok((scaling, theta, partial))
    }
}

/// The text config being read.
struct Reader<'a> {
    text: &'a Obj,
}

static EMPTY: std::sync::LazyLock<Obj> = std::sync::LazyLock::new(Obj::new);

impl<'a> Reader<'a> {
    /// `rope_scaling` when it is a non-empty object, else `rope_parameters`, else `{}`.
    fn rope_dict(&self) -> Result<&'a Obj, FrequencyError> {
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
    fn theta(&self, dict: &Obj, default: f64) -> Result<f64, FrequencyError> {
        Ok(match opt_f64(dict, "rope_theta")? {
            Some(t) => t,
            None => opt_f64(self.text, "rope_theta")?.unwrap_or(default),
        })
    }

    fn max_pos(&self) -> Result<Option<u64>, FrequencyError> {
        opt_u64(self.text, "max_position_embeddings")
    }

    /// `head_dim` when given (and not null), else `hidden_size / num_attention_heads`, else
    /// the class default.
    fn head_dim(&self, default: Option<u64>) -> Result<u64, FrequencyError> {
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

    fn num_layers(&self, default: Option<u64>) -> Result<u64, FrequencyError> {
        Ok(opt_u64(self.text, "num_hidden_layers")?
            .or(default)
            .unwrap_or(0))
    }

    /// The rope type of a dict: `rope_type`, else the legacy `type`, else `"default"`.
    fn rope_type(dict: &Obj) -> Result<String, FrequencyError> {
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
    fn scaling(
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
        let rope_type = Self::rope_type(dict)?;
        let rt = rope_type.as_str();
        let max_pos = self.max_pos()?;
        let missing = |key: &'static str| FrequencyError::MissingConfigKey {
            key,
            rope_type: rope_type.clone(),
        };
        let original = || -> Result<u64, FrequencyError> {
            if let Some(o) = original_override {
                return Ok(o);
            }
            if let Some(o) = opt_u64(self.text, "original_max_position_embeddings")? {
                return Ok(o);
            }
            if let Some(o) = opt_u64(dict, "original_max_position_embeddings")? {
                return Ok(o);
            }
            max_pos.ok_or_else(|| missing("original_max_position_embeddings"))
        };
        let need_max = || max_pos.ok_or_else(|| missing("max_position_embeddings"));
        let req = |key: &'static str| opt_f64(dict, key)?.ok_or_else(|| missing(key));
        let scaling = match rt {
            "default" => Scaling::Default,
            "linear" => Scaling::Linear {
                factor: req("factor")?,
            },
            "dynamic" => Scaling::DynamicNtk {
                factor: req("factor")?,
                original_max_position_embeddings: need_max()?,
            },
            "yarn" => {
                let orig = original()?;
                // HF 5.x requires the key (validate_rope raises KeyError without it); a null
                // value means max / original.
                let factor = match dict.get("factor") {
                    None => return Err(missing("factor")),
                    Some(Value::Null) => {
                        if orig == 0 {
                            return Err(FrequencyError::ZeroContextLength {
                                scaling: "YaRN",
                                name: "original_max_position_embeddings",
                            });
                        }
                        need_max()? as f64 / orig as f64
                    }
                    Some(_) => req("factor")?,
                };
                let truncate = match dict.get("truncate") {
                    None => true,
                    Some(Value::Bool(b)) => *b,
                    Some(Value::Null) => false,
                    Some(v) => return Err(invalid("truncate", "a boolean", v)),
                };
                Scaling::Yarn {
                    factor,
                    original_max_position_embeddings: orig,
                    beta_fast: f64_or(dict, "beta_fast", 32.0)?,
                    beta_slow: f64_or(dict, "beta_slow", 1.0)?,
                    mscale: opt_f64(dict, "mscale")?.unwrap_or(0.0),
                    mscale_all_dim: opt_f64(dict, "mscale_all_dim")?.unwrap_or(0.0),
                    attention_factor: opt_f64(dict, "attention_factor")?,
                    truncate,
                }
            }
            "llama3" => Scaling::Llama3 {
                factor: req("factor")?,
                low_freq_factor: req("low_freq_factor")?,
                high_freq_factor: req("high_freq_factor")?,
                original_max_position_embeddings: original()?,
            },
            // "su": Phi-3's legacy name (see `phi3` for what HF 5.x accepts of it).
            "longrope" | "su" => {
                let orig = original()?;
                let max = need_max()?;
                // HF: factor = the dict's, else max / original; the attention factor from
                // it, computed once for short and long alike.
                let attention_factor = match opt_f64(dict, "attention_factor")? {
                    Some(a) => a,
                    None => {
                        let factor = match opt_f64(dict, "factor")? {
                            Some(f) => f,
                            None => max as f64 / orig as f64,
                        };
                        longrope_attention_factor(factor, orig)
                    }
                };
                Scaling::LongRope {
                    short_factor: factor_list(dict, "short_factor", rt)?,
                    long_factor: factor_list(dict, "long_factor", rt)?,
                    original_max_position_embeddings: orig,
                    max_position_embeddings: max,
                    attention_factor: Some(attention_factor),
                }
            }
            "proportional" => Scaling::Proportional {
                partial_rotary_factor: opt_f64(dict, "partial_rotary_factor")?.unwrap_or(1.0),
                factor: opt_f64(dict, "factor")?.unwrap_or(1.0),
            },
            _ => return Err(FrequencyError::UnsupportedRopeType { rope_type }),
        };
        scaling.validate()?;
        Ok((scaling, rope_type))
    }

    /// Llama, Mistral, Qwen2/3: the common pipeline, rotate_half over the whole head (the
    /// default type ignores `partial_rotary_factor`; scaled types with one make HF fail).
    fn llama_like(&self, default_theta: f64, layout: PairLayout) -> Result<LayerRope> {
        let dict = self.rope_dict()?;
        let (scaling, rope_type) = self.scaling(dict, None)?;
        let partial = match opt_f64(dict, "partial_rotary_factor")? {
            Some(p) => Some(p),
            None => opt_f64(self.text, "partial_rotary_factor")?,
        };
        if rope_type != "default" && partial.is_some_and(|p| p != 1.0) {
            return Err(FrequencyError::HfRejects {
                what: "partial_rotary_factor with a scaled rope type in a llama-style family \
                       (its cos/sin come out narrower than the head and apply_rotary_pos_emb \
                       fails)",
            }
            .into());
        }
        let head_dim = self.head_dim(None)?;
        Ok(LayerRope {
            spec: RopeSpec::new()
                .base(self.theta(dict, default_theta)?)
                .pair_layout(layout)
                .scaling(scaling),
            head_dim,
        })
    }

    /// A spec with rotary width `int(head_dim * partial)` (must be even).
    fn partial(
        spec: RopeSpec,
        head_dim: u64,
        partial: f64,
    ) -> std::result::Result<LayerRope, FrequencyError> {
        let r = (head_dim as f64 * partial) as u64;
        if r == 0 || !r.is_multiple_of(2) || r > head_dim {
            return Err(FrequencyError::InvalidConfigValue {
                key: "partial_rotary_factor".into(),
                expected: "a factor giving an even rotary width of at most head_dim",
                found: format!("{partial} (head_dim {head_dim}: {r} lanes)"),
            });
        }
        let spec = if r == head_dim {
            spec
        } else {
            spec.rotary_dim(r)
        };
        Ok(LayerRope { spec, head_dim })
    }

    /// GPT-NeoX / Pythia: `rotary_emb_base` and `rotary_pct` (default 0.25) fill the rope
    /// dict's gaps; top-level `rope_theta` / `partial_rotary_factor` are not read.
    fn gpt_neox(&self) -> Result<LayerRope> {
        let dict = self.rope_dict()?;
        let (scaling, _) = self.scaling(dict, None)?;
        let theta = match opt_f64(dict, "rope_theta")? {
            Some(t) => t,
            None => opt_f64(self.text, "rotary_emb_base")?.unwrap_or(10_000.0),
        };
        let partial = match opt_f64(dict, "partial_rotary_factor")? {
            Some(p) => p,
            None => opt_f64(self.text, "rotary_pct")?.unwrap_or(0.25),
        };
        let spec = RopeSpec::new().base(theta).scaling(scaling);
        Ok(Self::partial(spec, self.head_dim(None)?, partial)?)
    }

    /// Phi-3: "su" and "yarn" are LongRoPE; `original_max_position_embeddings` is a class
    /// field (default 4096) that overrides the dict; partial rotary from the dict, else the
    /// top level.
    fn phi3(&self) -> Result<LayerRope> {
        let dict = self.rope_dict()?;
        let rope_type = Self::rope_type(dict)?;
        let original = opt_u64(self.text, "original_max_position_embeddings")?.unwrap_or(4096);
        let mut dict = dict.clone();
        if matches!(rope_type.as_str(), "su" | "yarn") {
            if rope_type == "su" && !dict.contains_key("original_max_position_embeddings") {
                // transformers 5.24 renames "su" only after checking the keys of "longrope".
                return Err(FrequencyError::HfRejects {
                    what: "a Phi-3 rope_scaling of legacy type \"su\" without its own \
                           original_max_position_embeddings (transformers 5.x fails to load \
                           it: KeyError); add the key or set \"type\": \"longrope\"",
                }
                .into());
            }
            dict.insert("rope_type".into(), Value::from("longrope"));
        }
        let (scaling, _) = self.scaling(&dict, Some(original))?;
        let partial = match opt_f64(&dict, "partial_rotary_factor")? {
            Some(p) => p,
            None => opt_f64(self.text, "partial_rotary_factor")?.unwrap_or(1.0),
        };
        let spec = RopeSpec::new()
            .base(self.theta(&dict, 10_000.0)?)
            .scaling(scaling);
        Ok(Self::partial(spec, self.head_dim(None)?, partial)?)
    }

    /// GPT-J: base 10000 hard-coded, interleaved pairs in the first `rotary_dim` (default
    /// 64) lanes; rope keys are not read.
    fn gptj(&self) -> Result<LayerRope> {
        let embd = opt_u64(self.text, "n_embd")?.or(opt_u64(self.text, "hidden_size")?);
        let heads = opt_u64(self.text, "n_head")?.or(opt_u64(self.text, "num_attention_heads")?);
        let head_dim = match (embd, heads) {
            (Some(e), Some(h)) if h > 0 => e / h,
            _ => 4096 / 16,
        };
        let r = match self.text.get("rotary_dim") {
            None => 64,
            Some(v) => opt_u64(self.text, "rotary_dim")?.ok_or_else(|| {
                invalid(
                    "rotary_dim",
                    "a whole number (null makes HF's table n_embd wide)",
                    v,
                )
            })?,
        };
        let spec = RopeSpec::new()
            .base(10_000.0)
            .pair_layout(PairLayout::Interleaved);
        Ok(Self::partial(spec, head_dim, r as f64 / head_dim as f64)?)
    }

    /// DeepSeek-V2/V3: the last `qk_rope_head_dim` (default 64) lanes of each head,
    /// interleaved (V3-style families: `rope_interleave`, default true).
    fn deepseek(&self, v3: bool) -> Result<LayerRope> {
        let dict = self.rope_dict()?;
        let (scaling, _) = self.scaling(dict, None)?;
        let head_dim = opt_u64(self.text, "qk_rope_head_dim")?.unwrap_or(64);
        let interleaved = !v3
            || match self.text.get("rope_interleave") {
                None | Some(Value::Null) => true,
                Some(Value::Bool(b)) => *b,
                Some(v) => return Err(invalid("rope_interleave", "a boolean", v).into()),
            };
        Ok(LayerRope {
            spec: RopeSpec::new()
                .base(self.theta(dict, 10_000.0)?)
                .scaling(scaling)
                .pair_layout(if interleaved {
                    PairLayout::Interleaved
                } else {
                    PairLayout::HalfSplit
                }),
            head_dim,
        })
    }

    /// Qwen2-VL / Qwen2.5-VL (contiguous sections) and Qwen3-VL (interleaved sections):
    /// M-RoPE over rotate_half pairs; a rope type "mrope" is the default frequencies.
    fn qwen_vl(
        &self,
        default_theta: f64,
        default_section: [u64; 3],
        interleaved: bool,
        default_head_dim: Option<u64>,
    ) -> Result<LayerRope> {
        let mut dict = self.rope_dict()?.clone();
        if Self::rope_type(&dict)? == "mrope" {
            dict.insert("rope_type".into(), Value::from("default"));
        }
        let (scaling, _) = self.scaling(&dict, None)?;
        let section = match dict.get("mrope_section") {
            None | Some(Value::Null) => default_section,
            Some(v) => {
                let s: Option<Vec<u64>> = v
                    .as_array()
                    .map(|a| a.iter().map(Value::as_u64).collect())
                    .unwrap_or(None);
                match s.as_deref() {
                    Some(&[t, h, w]) => [t, h, w],
                    _ => return Err(invalid("mrope_section", "three whole numbers", v).into()),
                }
            }
        };
        let head_dim = match default_head_dim {
            Some(d) => opt_u64(self.text, "head_dim")?.unwrap_or(d),
            None => self.head_dim(None)?,
        };
        Ok(LayerRope {
            spec: RopeSpec::new()
                .base(self.theta(&dict, default_theta)?)
                .scaling(scaling)
                .mrope(section, interleaved),
            head_dim,
        })
    }

    /// gpt-oss: one rotary module for every layer; YaRN 32 over 4096 (truncate false) when
    /// the file has no rope parameters.
    fn gpt_oss(&self) -> Result<LayerRope> {
        let dict = self.rope_dict()?;
        let injected: Obj;
        let dict = if dict.is_empty() {
            injected = serde_json::json!({
                "rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                "truncate": false, "original_max_position_embeddings": 4096
            })
            .as_object()
            .cloned()
            .unwrap_or_default();
            &injected
        } else {
            dict
        };
        let (scaling, _) = self.scaling(dict, None)?;
        Ok(LayerRope {
            spec: RopeSpec::new()
                .base(self.theta(dict, 150_000.0)?)
                .scaling(scaling),
            head_dim: self.head_dim(Some(64))?,
        })
    }

    /// Llama 4: interleaved (complex) pairs, base default 500000, head_dim default 128;
    /// `no_rope_layers[i]` truthy means layer `i` has RoPE (absent or empty: every 4th layer
    /// has none).
    fn llama4(&self, model_type: String) -> Result<HfRope> {
        let dict = self.rope_dict()?;
        let (scaling, _) = self.scaling(dict, None)?;
        let rope = LayerRope {
            spec: RopeSpec::new()
                .base(self.theta(dict, 500_000.0)?)
                .scaling(scaling)
                .pair_layout(PairLayout::Interleaved),
            head_dim: self.head_dim(Some(128))?,
        };
        let n = self.num_layers(Some(48))?;
        let interval = opt_u64(self.text, "no_rope_layer_interval")?
            .unwrap_or(4)
            .max(1);
        let listed: Vec<bool> = match self.text.get("no_rope_layers") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a.iter().map(truthy).collect(),
            Some(v) => return Err(invalid("no_rope_layers", "a list", v).into()),
        };
        let layers = (0..n as usize)
            .map(|i| {
                let has_rope = if listed.is_empty() {
                    !(i as u64 + 1).is_multiple_of(interval)
                } else {
                    listed.get(i).copied().unwrap_or(true)
                };
                usize::from(!has_rope)
            })
            .collect();
        Ok(HfRope {
            model_type,
            layer_types: vec![("rope".into(), Some(rope)), ("no_rope".into(), None)],
            layers,
        })
    }

    /// Gemma 3: global (`full_attention`) layers take `rope_theta` (default 1e6) and the
    /// scaling; local (`sliding_attention`) layers `rope_local_base_freq` (default 1e4) and
    /// none. 5.x files nest `rope_parameters` per layer type.
    fn gemma3(&self, model_type: String) -> Result<HfRope> {
        let head_dim = opt_u64(self.text, "head_dim")?.unwrap_or(256);
        let (mut full, mut sliding) = (Obj::new(), Obj::new());
        match self.text.get("rope_parameters") {
            Some(Value::Object(o))
                if o.contains_key("full_attention") || o.contains_key("sliding_attention") =>
            {
                for (name, target) in [
                    ("full_attention", &mut full),
                    ("sliding_attention", &mut sliding),
                ] {
                    match o.get(name) {
                        Some(Value::Object(d)) => *target = d.clone(),
                        None | Some(Value::Null) => {}
                        Some(v) => return Err(invalid(name, "an object", v).into()),
                    }
                }
            }
            _ => {}
        }
        // A 4.x `rope_scaling` applies to the global layers only.
        if let Some(Value::Object(s)) = self.text.get("rope_scaling")
            && !s.is_empty()
        {
            for (k, v) in s {
                full.insert(k.clone(), v.clone());
            }
        }
        let theta = |d: &Obj, key: &str, default: f64| -> Result<f64, FrequencyError> {
            Ok(match opt_f64(d, "rope_theta")? {
                Some(t) => t,
                None => opt_f64(self.text, key)?.unwrap_or(default),
            })
        };
        let full_theta = theta(&full, "rope_theta", 1e6)?;
        let sliding_theta = theta(&sliding, "rope_local_base_freq", 1e4)?;
        let mut ropes = Vec::new();
        for (d, base) in [(&sliding, sliding_theta), (&full, full_theta)] {
            let (scaling, _) = self.scaling(d, None)?;
            ropes.push(LayerRope {
                spec: RopeSpec::new().base(base).scaling(scaling),
                head_dim,
            });
        }
        let layers = self.sliding_or_full(Some(26), false)?;
        let mut ropes = ropes.into_iter();
        Ok(HfRope {
            model_type,
            layer_types: vec![
                ("sliding_attention".into(), ropes.next()),
                ("full_attention".into(), ropes.next()),
            ],
            layers,
        })
    }
}

impl Reader<'_> {
    /// Gemma 4: per-layer-type `rope_parameters` (defaults: local layers default RoPE with
    /// base 1e4 over `head_dim`, global layers proportional with `partial_rotary_factor`
    /// 0.25 and base 1e6 over `global_head_dim`, default 512).
    fn gemma4(&self, model_type: String) -> Result<HfRope> {
        let nested = match self.text.get("rope_parameters") {
            Some(Value::Object(o)) => o.clone(),
            None | Some(Value::Null) => Obj::new(),
            Some(v) => return Err(invalid("rope_parameters", "an object", v).into()),
        };
        let defaults = serde_json::json!({
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                               "rope_theta": 1000000.0},
        });
        let head_dims = [
            opt_u64(self.text, "head_dim")?.unwrap_or(256),
            opt_u64(self.text, "global_head_dim")?.unwrap_or(512),
        ];
        let mut layer_types = Vec::new();
        for (name, head_dim) in ["sliding_attention", "full_attention"]
            .into_iter()
            .zip(head_dims)
        {
            let dict = match nested.get(name) {
                Some(Value::Object(d)) => d.clone(),
                Some(Value::Null) => {
                    layer_types.push((name.to_string(), None));
                    continue;
                }
                None => defaults[name].as_object().cloned().unwrap_or_default(),
                Some(v) => return Err(invalid(name, "an object", v).into()),
            };
            let (scaling, _) = self.scaling(&dict, None)?;
            let base = opt_f64(&dict, "rope_theta")?.unwrap_or(10_000.0);
            layer_types.push((
                name.to_string(),
                Some(LayerRope {
                    spec: RopeSpec::new().base(base).scaling(scaling),
                    head_dim,
                }),
            ));
        }
        let layers = self.sliding_or_full(None, true)?;
        Ok(HfRope {
            model_type,
            layer_types,
            layers,
        })
    }
}

impl Reader<'_> {
    /// Per layer, 0 for `sliding_attention` and 1 for `full_attention`: the config's
    /// `layer_types`, else every `sliding_window_pattern`-th layer (default 6) global, and
    /// with `last_full` the last one too (Gemma 4).
    fn sliding_or_full(
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

fn object(config: &Value) -> Result<&Obj, FrequencyError> {
    config.as_object().ok_or(FrequencyError::ConfigNotObject {
        found: kind(config),
    })
}

fn str_key<'a>(obj: &'a Obj, key: &str) -> Result<Option<&'a str>, FrequencyError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(invalid(key, "a string", v)),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn invalid(key: &str, expected: &'static str, v: &Value) -> FrequencyError {
    let mut found = v.to_string();
    if found.len() > 80 {
        found.truncate(found.char_indices().nth(77).map_or(found.len(), |(i, _)| i));
        found.push_str("...");
    }
    FrequencyError::InvalidConfigValue {
        key: key.to_string(),
        expected,
        found,
    }
}

/// A number, or `None` when the key is missing or null.
fn opt_f64(obj: &Obj, key: &str) -> Result<Option<f64>, FrequencyError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| invalid(key, "a number", v)),
    }
}

/// A whole number, or `None` when the key is missing or null. Accepts `4096` and `4096.0`.
fn opt_u64(obj: &Obj, key: &str) -> Result<Option<u64>, FrequencyError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            if let Some(n) = v.as_u64() {
                return Ok(Some(n));
            }
            match v.as_f64() {
                Some(x) if x >= 0.0 && x.fract() == 0.0 && x < 1.8e19 => Ok(Some(x as u64)),
                _ => Err(invalid(key, "a non-negative whole number", v)),
            }
        }
    }
}

fn factor_list(obj: &Obj, key: &'static str, rope_type: &str) -> Result<Vec<f64>, FrequencyError> {
    match obj.get(key) {
        None | Some(Value::Null) => Err(FrequencyError::MissingConfigKey {
            key,
            rope_type: rope_type.to_string(),
        }),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_f64()
                    .ok_or_else(|| invalid(&format!("{key}[{i}]"), "a number", v))
            })
            .collect(),
        Some(v) => Err(invalid(key, "an array of numbers", v)),
    }
}

/// Python truthiness of a config value, the way HF's `x or default` reads it.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// HF's `get(key) or default` for a number.
fn f64_or(obj: &Obj, key: &str, default: f64) -> Result<f64, FrequencyError> {
    match obj.get(key) {
        Some(v) if truthy(v) => v.as_f64().ok_or_else(|| invalid(key, "a number", v)),
        _ => Ok(default),
    }
}
