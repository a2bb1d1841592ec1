//! The families' own rules: which keys, defaults, pair layout and layers each one's
//! configuration and modeling code in transformers reads (tests/data/hf/README.md).

use serde_json::Value;

use super::config::{Obj, RopeDict, Whole, parse, truthy};
use super::reader::Reader;
use super::{HfRope, LayerRope};
use crate::error::Result;
use crate::frequencies::FrequencyError;
use crate::spec::{OutputOrder, PairLayout, RopeSpec};

impl Reader<'_> {
    /// Llama, Mistral, Qwen2/3: the common pipeline, rotate_half over the whole head (the
    /// default type ignores `partial_rotary_factor`; scaled types with one make HF fail).
    pub(super) fn llama_like(&self, default_theta: f64, layout: PairLayout) -> Result<LayerRope> {
        let dict = self.rope_dict()?;
        let (scaling, rope_type) = self.scaling(&dict, None)?;
        let partial = self.partial_rotary_factor(&dict);
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
                .base(self.theta(&dict, default_theta))
                .pair_layout(layout)
                .scaling(scaling),
            head_dim,
            hf_order: OutputOrder::Pairs,
        })
    }

    /// A spec with rotary width `int(head_dim * partial)` (must be even).
    pub(super) fn partial(
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
        Ok(LayerRope {
            spec,
            head_dim,
            hf_order: OutputOrder::Pairs,
        })
    }

    /// GPT-NeoX / Pythia: `rotary_emb_base` and `rotary_pct` (default 0.25) fill the rope
    /// dict's gaps; top-level `rope_theta` / `partial_rotary_factor` are not read.
    pub(super) fn gpt_neox(&self) -> Result<LayerRope> {
        let dict = self.rope_dict()?;
        let (scaling, _) = self.scaling(&dict, None)?;
        let theta = dict
            .rope_theta
            .or(self.text.rotary_emb_base)
            .unwrap_or(10_000.0);
        let partial = dict
            .partial_rotary_factor
            .or(self.text.rotary_pct)
            .unwrap_or(0.25);
        let spec = RopeSpec::new().base(theta).scaling(scaling);
        Ok(Self::partial(spec, self.head_dim(None)?, partial)?)
    }

    /// Phi-3: "su" and "yarn" are LongRoPE; `original_max_position_embeddings` is a class
    /// field (default 4096) that overrides the dict; partial rotary from the dict, else the
    /// top level.
    pub(super) fn phi3(&self) -> Result<LayerRope> {
        let mut dict = self.rope_dict()?;
        let rope_type = dict.kind().to_string();
        let original = self
            .text
            .original_max_position_embeddings
            .map_or(4096, |w| w.0);
        if matches!(rope_type.as_str(), "su" | "yarn") {
            if rope_type == "su" && dict.original_max_position_embeddings.is_none() {
                // transformers 5.24 renames "su" only after checking the keys of "longrope".
                return Err(FrequencyError::HfRejects {
                    what: "a Phi-3 rope_scaling of legacy type \"su\" without its own \
                           original_max_position_embeddings (transformers 5.x fails to load \
                           it: KeyError); add the key or set \"type\": \"longrope\"",
                }
                .into());
            }
            dict.rope_type = Some("longrope".into());
        }
        let (scaling, _) = self.scaling(&dict, Some(original))?;
        let partial = self.partial_rotary_factor(&dict).unwrap_or(1.0);
        let spec = RopeSpec::new()
            .base(self.theta(&dict, 10_000.0))
            .scaling(scaling);
        Ok(Self::partial(spec, self.head_dim(None)?, partial)?)
    }

    /// GPT-J: base 10000 hard-coded, interleaved pairs in the first `rotary_dim` (default
    /// 64) lanes; rope keys are not read.
    pub(super) fn gptj(&self) -> Result<LayerRope> {
        let t = self.text;
        let head_dim = match (
            t.n_embd.or(t.hidden_size),
            t.n_head.or(t.num_attention_heads),
        ) {
            (Some(e), Some(h)) if h.0 > 0 => e.0 / h.0,
            _ => 4096 / 16,
        };
        let r = match t.rotary_dim {
            None => 64,
            Some(Some(Whole(r))) => r,
            Some(None) => {
                return Err(FrequencyError::InvalidConfigValue {
                    key: "rotary_dim".into(),
                    expected: "a whole number (null makes HF's table n_embd wide)",
                    found: "null".into(),
                }
                .into());
            }
        };
        let spec = RopeSpec::new()
            .base(10_000.0)
            .pair_layout(PairLayout::Interleaved);
        Ok(Self::partial(spec, head_dim, r as f64 / head_dim as f64)?)
    }

    /// DeepSeek-V2/V3: the last `qk_rope_head_dim` (default 64) lanes of each head,
    /// interleaved (V3-style families: `rope_interleave`, default true).
    pub(super) fn deepseek(&self, v3: bool) -> Result<LayerRope> {
        let dict = self.rope_dict()?;
        let (scaling, _) = self.scaling(&dict, None)?;
        let head_dim = self.text.qk_rope_head_dim.map_or(64, |w| w.0);
        let interleaved = !v3 || self.text.rope_interleave.unwrap_or(true);
        // V3's `apply_rotary_pos_emb_interleave` returns the rotated pairs' first elements,
        // then their second ones; V2's complex pairs stay in place.
        let order = if v3 && interleaved {
            OutputOrder::PairHalves
        } else {
            OutputOrder::Pairs
        };
        Ok(LayerRope {
            spec: RopeSpec::new()
                .base(self.theta(&dict, 10_000.0))
                .scaling(scaling)
                .pair_layout(if interleaved {
                    PairLayout::Interleaved
                } else {
                    PairLayout::HalfSplit
                }),
            head_dim,
            hf_order: order,
        })
    }

    /// Qwen2-VL / Qwen2.5-VL (contiguous sections) and Qwen3-VL (interleaved sections):
    /// M-RoPE over rotate_half pairs; a rope type "mrope" is the default frequencies.
    pub(super) fn qwen_vl(
        &self,
        default_theta: f64,
        default_section: [u64; 3],
        interleaved: bool,
        default_head_dim: Option<u64>,
    ) -> Result<LayerRope> {
        let mut dict = self.rope_dict()?;
        if dict.kind() == "mrope" {
            dict.rope_type = Some("default".into());
        }
        let (scaling, _) = self.scaling(&dict, None)?;
        let section = dict
            .mrope_section
            .map_or(default_section, |s| s.map(|w| w.0));
        let head_dim = match default_head_dim {
            Some(d) => self.text.head_dim.map_or(d, |w| w.0),
            None => self.head_dim(None)?,
        };
        Ok(LayerRope {
            spec: RopeSpec::new()
                .base(self.theta(&dict, default_theta))
                .scaling(scaling)
                .mrope(section, interleaved),
            head_dim,
            hf_order: OutputOrder::Pairs,
        })
    }

    /// gpt-oss: one rotary module for every layer; YaRN 32 over 4096 (truncate false) when
    /// the file has no rope parameters.
    pub(super) fn gpt_oss(&self) -> Result<LayerRope> {
        let dict = if self.rope_map().is_none_or(|(m, _)| m.is_empty()) {
            RopeDict {
                factor: Some(Some(32.0)),
                beta_fast: Some(32.0),
                beta_slow: Some(1.0),
                truncate: Some(Some(false)),
                original_max_position_embeddings: Some(Whole(4096)),
                rope_type: Some("yarn".into()),
                ..RopeDict::default()
            }
        } else {
            self.rope_dict()?
        };
        let (scaling, _) = self.scaling(&dict, None)?;
        Ok(LayerRope {
            spec: RopeSpec::new()
                .base(self.theta(&dict, 150_000.0))
                .scaling(scaling),
            head_dim: self.head_dim(Some(64))?,
            hf_order: OutputOrder::Pairs,
        })
    }

    /// Llama 4: interleaved (complex) pairs, base default 500000, head_dim default 128;
    /// `no_rope_layers[i]` truthy means layer `i` has RoPE (absent or empty: every 4th layer
    /// has none).
    pub(super) fn llama4(&self, model_type: String) -> Result<HfRope> {
        let dict = self.rope_dict()?;
        let (scaling, _) = self.scaling(&dict, None)?;
        let rope = LayerRope {
            spec: RopeSpec::new()
                .base(self.theta(&dict, 500_000.0))
                .scaling(scaling)
                .pair_layout(PairLayout::Interleaved),
            head_dim: self.head_dim(Some(128))?,
            hf_order: OutputOrder::Pairs,
        };
        let n = self.num_layers()?;
        let interval = self.text.no_rope_layer_interval.map_or(4, |w| w.0).max(1);
        let listed: Vec<bool> = self
            .text
            .no_rope_layers
            .iter()
            .flatten()
            .map(truthy)
            .collect();
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
            qk_norm: None,
        })
    }

    /// Gemma 3: global (`full_attention`) layers take `rope_theta` (default 1e6) and the
    /// scaling; local (`sliding_attention`) layers `rope_local_base_freq` (default 1e4) and
    /// none. 5.x files nest `rope_parameters` per layer type.
    pub(super) fn gemma3(&self, model_type: String) -> Result<HfRope> {
        let head_dim = self.text.head_dim.map_or(256, |w| w.0);
        let (mut full, mut sliding) = (Obj::new(), Obj::new());
        if let Some(o) = &self.text.rope_parameters
            && (o.contains_key("full_attention") || o.contains_key("sliding_attention"))
        {
            for (name, target) in [
                ("full_attention", &mut full),
                ("sliding_attention", &mut sliding),
            ] {
                if let Some(d) = layer_dict(o, name)? {
                    *target = d.clone();
                }
            }
        }
        // A 4.x `rope_scaling` applies to the global layers only.
        if let Some(s) = &self.text.rope_scaling {
            full.extend(s.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let full: RopeDict = parse(Value::Object(full), "rope_parameters.full_attention")?;
        let sliding: RopeDict = parse(Value::Object(sliding), "rope_parameters.sliding_attention")?;
        let full_theta = self.theta(&full, 1e6);
        let sliding_theta = sliding
            .rope_theta
            .or(self.text.rope_local_base_freq)
            .unwrap_or(1e4);
        let mut ropes = Vec::new();
        for (d, base) in [(&sliding, sliding_theta), (&full, full_theta)] {
            let (scaling, _) = self.scaling(d, None)?;
            ropes.push(LayerRope {
                spec: RopeSpec::new().base(base).scaling(scaling),
                head_dim,
                hf_order: OutputOrder::Pairs,
            });
        }
        let layers = self.sliding_or_full(
            "sliding_attention or full_attention (the layer types Gemma 3 has RoPE for)",
            false,
        )?;
        let mut ropes = ropes.into_iter();
        Ok(HfRope {
            model_type,
            layer_types: vec![
                ("sliding_attention".into(), ropes.next()),
                ("full_attention".into(), ropes.next()),
            ],
            layers,
            qk_norm: None,
        })
    }

    /// Gemma 4: per-layer-type `rope_parameters` (defaults: local layers default RoPE with
    /// base 1e4 over `head_dim`, global layers proportional with `partial_rotary_factor`
    /// 0.25 and base 1e6 over `global_head_dim`, default 512).
    pub(super) fn gemma4(&self, model_type: String) -> Result<HfRope> {
        let empty = Obj::new();
        let nested = self.text.rope_parameters.as_ref().unwrap_or(&empty);
        let defaults = [
            RopeDict::of_type("default", 10_000.0),
            RopeDict {
                partial_rotary_factor: Some(0.25),
                ..RopeDict::of_type("proportional", 1_000_000.0)
            },
        ];
        let head_dims = [
            self.text.head_dim.map_or(256, |w| w.0),
            self.text.global_head_dim.map_or(512, |w| w.0),
        ];
        let mut layer_types = Vec::new();
        for ((name, head_dim), default) in ["sliding_attention", "full_attention"]
            .into_iter()
            .zip(head_dims)
            .zip(defaults)
        {
            let dict = match nested.get(name) {
                None => default,
                // A layer type whose parameters are null has no RoPE.
                Some(Value::Null) => {
                    layer_types.push((name.to_string(), None));
                    continue;
                }
                Some(v) => parse(v.clone(), &format!("rope_parameters.{name}"))?,
            };
            let (scaling, _) = self.scaling(&dict, None)?;
            let base = dict.rope_theta.unwrap_or(10_000.0);
            layer_types.push((
                name.to_string(),
                Some(LayerRope {
                    spec: RopeSpec::new().base(base).scaling(scaling),
                    head_dim,
                    hf_order: OutputOrder::Pairs,
                }),
            ));
        }
        let layers = self.sliding_or_full(
            "sliding_attention or full_attention (the layer types Gemma 4 has RoPE for)",
            true,
        )?;
        Ok(HfRope {
            model_type,
            layer_types,
            layers,
            qk_norm: None,
        })
    }
}

/// The dict of layer type `name` in per-layer `rope_parameters` (`None`: absent or null).
fn layer_dict<'a>(o: &'a Obj, name: &str) -> std::result::Result<Option<&'a Obj>, FrequencyError> {
    match o.get(name) {
        Some(Value::Object(d)) => Ok(Some(d)),
        None | Some(Value::Null) => Ok(None),
        Some(v) => Err(FrequencyError::ConfigKeyType {
            key: format!("rope_parameters.{name}"),
            message: format!("expected an object, found {}", super::config::kind(v)),
        }),
    }
}
