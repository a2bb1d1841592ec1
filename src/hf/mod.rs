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

mod config;
mod diffusers;
mod diffusers_rope;
mod diffusers_rope_rules;
mod diffusers_timesteps;
mod diffusers_weights;
mod encoder_rope_rules;
mod encoder_rule;
mod families;
mod generic;
mod reader;
mod safetensors;
mod table;
mod timm_pe;
mod vision_rope;
mod vision_rope_refused;
mod vision_rope_rules;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::frequencies::{FrequencyError, Scaling};
use crate::spec::{MRopeOrder, NormWeight, OutputOrder, PairLayout, RopeSpec};
use config::{TextConfig, TopConfig, kind, parse};
pub use diffusers::DIFFUSERS_WITHOUT_TABLE;
pub use diffusers_rope::{
    DIFFUSERS_ROPE_NOT_READ, DIFFUSERS_WITHOUT_ROPE_MODULE, PositionAxis, RotaryModule,
};
pub use diffusers_timesteps::{DIFFUSERS_WITHOUT_PROJECTION, TimestepProjection};
use reader::Reader;
pub use vision_rope_refused::HF_VISION_ROPE_NOT_READ;

/// `config` as an object of type `T` (read from the top level).
fn top_level<T: serde::de::DeserializeOwned>(config: &Value) -> Result<T, FrequencyError> {
    if !config.is_object() {
        return Err(FrequencyError::ConfigNotObject {
            found: kind(config),
        });
    }
    parse(config.clone(), "")
}

/// The RoPE of one layer type of a model.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerRope {
    /// The spec, as HF's rotary module for this layer type computes it.
    pub spec: RopeSpec,
    /// The head dimension of the tensors it rotates (the view's last axis). DeepSeek-V2/V3
    /// rotate only the `qk_rope_head_dim` lanes at the end of each query head (`q_pe`) and
    /// the shared `k_pe`: this is their width.
    pub head_dim: u64,
    /// The order in which the family's HF code returns the rotated lanes: attention scores
    /// are the same in either order, Q, K and a K cache are not. To write HF's order, set it
    /// on an out-of-place call's spec: `spec.clone().output_order(layer.hf_order)`.
    pub hf_order: OutputOrder,
}

impl LayerRope {
    /// The lane of HF's output that holds lane `lane` of the crate's in-place output.
    pub fn hf_lane(&self, lane: u64) -> u64 {
        let r = self.spec.rotary_dim.unwrap_or(self.head_dim);
        self.hf_order.lane(r, lane)
    }
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
    /// The per-head RMS norm the family's attention applies to Q and K before the rotation
    /// (Qwen3: `Qwen3RMSNorm`, Gemma 3: `Gemma3RMSNorm`), with the config's `rms_norm_eps`;
    /// its weights are the checkpoint's `q_norm.weight` and `k_norm.weight` (give them as
    /// [`crate::QkNorm`]). `None` for families without one.
    pub qk_norm: Option<HfQkNorm>,
}

/// How a family normalizes Q and K per head (see [`HfRope::qk_norm`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HfQkNorm {
    /// `x * w` or `x * (1 + w)`.
    pub weight: NormWeight,
    /// Added to the mean square.
    pub eps: f32,
}

impl HfRope {
    /// The most layers a config may declare (`num_hidden_layers`): the per-layer table is
    /// allocated from it. Models have at most a few hundred.
    pub const MAX_LAYERS: u64 = 1 << 16;

    /// Reads `config` (the contents of `config.json`) as transformers 5.x does. Needs the
    /// cargo feature `hf-config`.
    ///
    /// The layer count is `num_hidden_layers` (GPT-J: `n_layer`), else the family's class
    /// default, at most [`HfRope::MAX_LAYERS`]; `layer_types`, where the file has them, must
    /// be names transformers accepts (legacy ones such as `"attention"` are renamed as it
    /// renames them) and as many as the layers, or the config is refused as transformers
    /// refuses it. They decide the RoPE of Gemma 3 and 4 layers; other families' layers all
    /// rotate alike whatever their attention kind (Llama 4: `no_rope_layers` decides).
    pub fn from_config(config: &Value) -> Result<Self> {
        let top: TopConfig = top_level(config)?;
        let model_type = top.model_type.ok_or(FrequencyError::MissingConfigKey {
            key: "model_type",
            rope_type: "any".into(),
        })?;
        // The language model's config: the sub-config where there is one; Qwen2-VL files
        // of transformers 4.x are flat and build it from the top-level keys.
        let key = text_key(config)?;
        let text: TextConfig = match key {
            Some(key) => parse(config[key].clone(), key)?,
            None => top_level(config)?,
        };
        let text_type = match (&text.model_type, key.is_some()) {
            (Some(own), true) => own.clone(),
            (None, true) => format!("{model_type}_text"),
            (_, false) => model_type,
        };
        let family = text_type.strip_suffix("_text").unwrap_or(&text_type);
        let qk_norm = match family {
            // Qwen3RMSNorm, Qwen3MoeRMSNorm, Qwen3VLTextRMSNorm: `w * x / rms`.
            "qwen3" | "qwen3_moe" | "qwen3_vl" | "qwen3_vl_moe" => Some(NormWeight::Scale),
            // Gemma3RMSNorm: `x / rms * (1 + w)`. (Gemma 4 also normalizes V, which the
            // fused call does not: not reported.)
            "gemma3" => Some(NormWeight::OnePlus),
            _ => None,
        }
        .map(|weight| HfQkNorm {
            weight,
            eps: text.rms_norm_eps.unwrap_or(1e-6) as f32,
        });
        let mut rope = match FAMILIES.iter().find(|f| f.names.contains(&family)) {
            Some(read_family) => {
                let read = Reader {
                    text: &text,
                    default_layers: read_family.layers,
                };
                read.check_layer_types()?;
                (read_family.read)(&read, text_type)?
            }
            None => match table::rules(family) {
                Some(rules) => {
                    let own = key.map_or(config, |k| &config[k]);
                    let class_view: Option<TextConfig> = rules
                        .class_view(own)
                        .map(|v| parse(v, key.unwrap_or("")))
                        .transpose()?;
                    Reader {
                        text: class_view.as_ref().unwrap_or(&text),
                        default_layers: rules.layers,
                    }
                    .by_rules(rules, text_type)?
                }
                None => {
                    return Err(match table::refused(family) {
                        Some(reason) => FrequencyError::FamilyNotRead {
                            model_type: text_type,
                            reason: reason.to_string(),
                        },
                        None => FrequencyError::UnsupportedModelType {
                            model_type: text_type,
                            families: family_names(),
                        },
                    }
                    .into());
                }
            },
        };
        rope.qk_norm = qk_norm;
        Ok(rope)
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

/// A family `HfRope::from_config` reads: its `model_type`s (the text config's, `_text`
/// stripped), its config class's default `num_hidden_layers` (transformers 5.24), and how
/// its RoPE is read.
struct Family {
    names: &'static [&'static str],
    layers: u64,
    read: fn(&Reader<'_>, String) -> Result<HfRope>,
}

/// Every family read, in one table: the dispatch and the error's list both come from it.
static FAMILIES: &[Family] = &[
    Family {
        names: &["llama", "mistral", "mixtral", "qwen2", "qwen3"],
        layers: 32,
        read: |r, t| r.uniform(t, r.llama_like(10_000.0, PairLayout::HalfSplit)?),
    },
    Family {
        names: &["qwen2_moe", "qwen3_moe"],
        layers: 24,
        read: |r, t| r.uniform(t, r.llama_like(10_000.0, PairLayout::HalfSplit)?),
    },
    Family {
        names: &["llama4"],
        layers: 48,
        read: |r, t| r.llama4(t),
    },
    Family {
        names: &["qwen2_vl", "qwen2_5_vl"],
        layers: 80,
        read: |r, t| r.uniform(t, r.qwen_vl(1e6, [16, 24, 24], false, None)?),
    },
    Family {
        names: &["qwen3_vl"],
        layers: 32,
        read: |r, t| r.uniform(t, r.qwen_vl(500_000.0, [24, 20, 20], true, Some(128))?),
    },
    Family {
        names: &["qwen3_vl_moe"],
        layers: 24,
        read: |r, t| r.uniform(t, r.qwen_vl(500_000.0, [24, 20, 20], true, Some(128))?),
    },
    Family {
        names: &["phi3"],
        layers: 32,
        read: |r, t| r.uniform(t, r.phi3()?),
    },
    Family {
        names: &["gpt_neox"],
        layers: 44,
        read: |r, t| r.uniform(t, r.gpt_neox()?),
    },
    Family {
        // CodeGen's attention is GPT-J's (rotate_every_two over `rotary_dim` lanes).
        names: &["gptj", "codegen"],
        layers: 28,
        read: |r, t| r.uniform(t, r.gptj()?),
    },
    Family {
        names: &["deepseek_v2"],
        layers: 32,
        read: |r, t| r.uniform(t, r.deepseek(false)?),
    },
    Family {
        names: &["deepseek_v3"],
        layers: 61,
        read: |r, t| r.uniform(t, r.deepseek(true)?),
    },
    Family {
        names: &["gemma3"],
        layers: 26,
        read: |r, t| r.gemma3(t),
    },
    Family {
        names: &["gemma4"],
        layers: 30,
        read: |r, t| r.gemma4(t),
    },
    Family {
        names: &["gpt_oss"],
        layers: 36,
        read: |r, t| r.uniform(t, r.gpt_oss()?),
    },
];

/// The `model_type`s read, comma-separated (for the error of any other).
fn family_names() -> String {
    let mut names: Vec<&str> = FAMILIES
        .iter()
        .flat_map(|f| f.names)
        .copied()
        .chain(table::names())
        .collect();
    names.sort_unstable();
    names.dedup();
    names.join(", ")
}

/// The key of the language model's sub-config, as `get_text_config(decoder=True)` finds
/// it: one of `text_config`, `decoder` (T5Gemma), `generator`, where it is an object (two
/// are ambiguous, and transformers refuses them), else Dia's `decoder_config`. (Parsing
/// `TopConfig` has checked that each present one is an object or null.)
fn text_key(config: &Value) -> Result<Option<&'static str>, FrequencyError> {
    let object = |k: &str| config.get(k).is_some_and(Value::is_object);
    let found: Vec<&'static str> = ["text_config", "decoder", "generator"]
        .into_iter()
        .filter(|k| object(k))
        .collect();
    match found[..] {
        [] => Ok(object("decoder_config").then_some("decoder_config")),
        [k] => Ok(Some(k)),
        _ => Err(FrequencyError::InvalidConfigValue {
            key: found.join(", "),
            expected: "one language-model sub-config (transformers' get_text_config refuses \
                       a file with more: keep the one the model generates with)",
            found: format!("{} sub-configs", found.len()),
        }),
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
        let text: TextConfig = top_level(config)?;
        let read = Reader {
            text: &text,
            default_layers: 0,
        };
        let dict = read.rope_dict()?;
        let theta = read.theta(&dict, 10_000.0);
        let partial = read.partial_rotary_factor(&dict);
        let (scaling, _) = read.scaling(&dict, None)?;
        Ok((scaling, theta, partial))
    }
}

/// Layer indices as ranges: `0-2, 4-6, 8`.
fn ranges(layers: impl Iterator<Item = usize>) -> String {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for i in layers {
        match out.last_mut() {
            Some((_, end)) if *end + 1 == i => *end = i,
            _ => out.push((i, i)),
        }
    }
    out.iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl std::fmt::Display for LayerRope {
    /// One line: pair layout, rotated lanes of the head, base, scaling, attention factor,
    /// M-RoPE sections, and HF's output order where it is not the pairs' own.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.spec;
        let r = s.rotary_dim.unwrap_or(self.head_dim);
        let pairs = match s.pair_layout {
            PairLayout::HalfSplit => "half-split",
            PairLayout::Interleaved => "interleaved",
        };
        write!(
            f,
            "{pairs} pairs, {r} of {} lanes, base {}, {} scaling",
            self.head_dim,
            s.base,
            s.scaling.name()
        )?;
        // At the original context (no length-dependent switch): the factor HF multiplies
        // into cos and sin.
        if let Ok(freq) = s
            .scaling
            .frequencies(r.min(u64::from(u32::MAX)) as u32, s.base, 0)
            && freq.attention_factor != 1.0
        {
            write!(f, ", attention factor {:.6}", freq.attention_factor)?;
        }
        if s.inverse {
            write!(f, ", rotated by -angle")?;
        }
        if let Some(m) = s.mrope {
            let kind = match m.order {
                MRopeOrder::Chunks => "contiguous",
                MRopeOrder::Interleaved => "interleaved",
                MRopeOrder::HwThenT => "h w alternating, then t",
                MRopeOrder::WhThenT => "w h alternating, then t",
                MRopeOrder::WhtChunks => "contiguous, w then h then t",
            };
            write!(f, ", M-RoPE sections {:?} ({kind})", m.section)?;
        }
        if self.hf_order == OutputOrder::PairHalves {
            write!(f, ", HF writes pair halves (OutputOrder::PairHalves)")?;
        }
        Ok(())
    }
}

impl std::fmt::Display for HfRope {
    /// What `from_config` read: the model type, its QK-norm, and each layer type with its
    /// layers and RoPE (or none).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} layers", self.model_type, self.layers.len())?;
        if let Some(n) = self.qk_norm {
            let w = match n.weight {
                NormWeight::Scale => "x / rms * w",
                NormWeight::OnePlus => "x / rms * (1 + w)",
            };
            write!(f, ", QK-norm {w} (eps {:e})", n.eps)?;
        }
        for (t, (name, rope)) in self.layer_types.iter().enumerate() {
            let layers = ranges(
                self.layers
                    .iter()
                    .enumerate()
                    .filter(|&(_, &k)| k == t)
                    .map(|(i, _)| i),
            );
            if layers.is_empty() {
                continue;
            }
            write!(f, "\n  {name} (layers {layers}): ")?;
            match rope {
                Some(r) => write!(f, "{r}")?,
                None => write!(f, "no RoPE")?,
            }
        }
        Ok(())
    }
}
