//! Families read by the table's rules (`table.rs`): the common pipeline of
//! `modeling_rope_utils.py` with each family's class defaults, pair layout and layer gate.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::config::{Pattern, RopeDict, parse, truthy};
use super::reader::Reader;
use super::table::{Gate, Rules, TableLayout};
use super::{HfRope, LayerRope};
use crate::error::Result;
use crate::frequencies::{FrequencyError, Scaling};
use crate::spec::{OutputOrder, PairLayout, RopeSpec};

/// Layer kinds without attention: no RoPE whatever the family.
const NON_ATTENTION: [&str; 3] = ["linear_attention", "conv", "mamba"];

impl Reader<'_> {
    /// The RoPE of a family read by `rules`.
    pub(super) fn by_rules(&self, rules: &Rules, model_type: String) -> Result<HfRope> {
        let n = self.num_layers()? as usize;
        let kinds: Vec<&str> = match self.check_layer_types()? {
            Some(k) => k,
            None if rules.gate == Gate::AttentionLayerIndices => self.attention_layers(n),
            None => match self.pattern(rules)? {
                Some(p) => (0..n as u64)
                    .map(|i| {
                        if (i + 1).is_multiple_of(p) {
                            "full_attention"
                        } else {
                            "sliding_attention"
                        }
                    })
                    .collect(),
                None => self.block_types(n)?,
            },
        };
        let rotates = self.gate(rules, &kinds)?;
        let head_dims = self.layer_head_dims(n)?;
        let mut layer_types: Vec<(String, Option<LayerRope>)> = Vec::new();
        // Each layer type's index by name: a config may give every layer a type of its own.
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut layers = Vec::with_capacity(n);
        for (i, &kind) in kinds.iter().enumerate() {
            let rope = rotates[i];
            let head_dim = head_dims[i];
            let name = match (rope, head_dim) {
                (true, None) => kind.to_string(),
                (true, Some(d)) => format!("{kind} (head_dim {d})"),
                (false, _) => format!("{kind} (no RoPE)"),
            };
            let t = match index.get(&name) {
                Some(&t) => t,
                None => {
                    let layer = if rope {
                        Some(self.rules_layer(rules, kind, head_dim)?)
                    } else {
                        None
                    };
                    index.insert(name.clone(), layer_types.len());
                    layer_types.push((name, layer));
                    layer_types.len() - 1
                }
            };
            layers.push(t);
        }
        Ok(HfRope {
            model_type,
            layer_types,
            layers,
            qk_norm: None,
        })
    }

    /// Per layer, whether it rotates.
    fn gate(&self, rules: &Rules, kinds: &[&str]) -> Result<Vec<bool>, FrequencyError> {
        let t = self.text;
        let attention = |k: &str| !NON_ATTENTION.contains(&k);
        let listed: Vec<bool> = t.no_rope_layers.iter().flatten().map(truthy).collect();
        let interval = t.no_rope_layer_interval.map_or(4, |w| w.0).max(1);
        let cross: HashSet<u64> = t
            .cross_attention_layers
            .iter()
            .flatten()
            .map(|w| w.0)
            .collect();
        Ok(kinds
            .iter()
            .enumerate()
            .map(|(i, &k)| {
                attention(k)
                    && match rules.gate {
                        Gate::All => true,
                        Gate::SlidingOnly => k == "sliding_attention",
                        Gate::SlidingUnlessNoWindow => {
                            matches!(t.sliding_window, None | Some(None))
                                || k == "sliding_attention"
                        }
                        Gate::NoRopeLayers => {
                            if listed.is_empty() {
                                !(i as u64 + 1).is_multiple_of(interval)
                            } else {
                                listed.get(i).copied().unwrap_or(true)
                            }
                        }
                        Gate::NotCrossAttention => !cross.contains(&(i as u64)),
                        // The kinds say it (`attention_layers`).
                        Gate::AttentionLayerIndices => true,
                    }
            })
            .collect())
    }

    /// The parameter dict of layer kind `kind`: its own where `rope_parameters` holds one
    /// per layer type, else the model's.
    fn kind_dict(&self, kind: &str) -> Result<RopeDict, FrequencyError> {
        if let Some(o) = &self.text.rope_parameters
            && !o.is_empty()
            && o.values().all(|v| v.is_object() || v.is_null())
            && self.text.rope_scaling.as_ref().is_none_or(|s| s.is_empty())
        {
            return match o.get(kind) {
                Some(Value::Object(d)) => {
                    parse(Value::Object(d.clone()), &format!("rope_parameters.{kind}"))
                }
                _ => Err(FrequencyError::MissingConfigKey {
                    key: "rope_parameters.<layer type> (one dict for every layer type that rotates)",
                    rope_type: "any".into(),
                }),
            };
        }
        self.rope_dict()
    }

    /// The period of sliding and full layers where the file has no `layer_types`: its own
    /// `sliding_window_pattern`, else the family's default (none: no pattern).
    fn pattern(&self, rules: &Rules) -> Result<Option<u64>, FrequencyError> {
        if rules.sliding_window_pattern.is_none() {
            return Ok(None);
        }
        match &self.text.sliding_window_pattern {
            None => Ok(rules.sliding_window_pattern),
            Some(Pattern::Every(w)) if w.0 > 0 => Ok(Some(w.0)),
            Some(p) => Err(FrequencyError::InvalidConfigValue {
                key: "sliding_window_pattern".into(),
                expected: "a positive whole number where the file has no layer_types \
                           (transformers computes the layer types from it)",
                found: match p {
                    Pattern::Every(w) => w.0.to_string(),
                    Pattern::Letters(l) => format!("{l:?}"),
                },
            }),
        }
    }

    /// Layer kinds from `block_types` where there are no `layer_types` (RecurrentGemma: the
    /// pattern repeats; `recurrent` blocks have no attention, `attention` blocks slide), else
    /// every layer full attention.
    fn block_types(&self, n: usize) -> Result<Vec<&'static str>, FrequencyError> {
        let Some(blocks) = &self.text.block_types else {
            return Ok(vec!["full_attention"; n]);
        };
        if blocks.is_empty() {
            return Err(FrequencyError::InvalidConfigValue {
                key: "block_types".into(),
                expected: "a non-empty list of \"recurrent\" / \"attention\"",
                found: "[]".into(),
            });
        }
        Ok((0..n)
            .map(|i| match blocks[i % blocks.len()].as_str() {
                "attention" => "sliding_attention",
                _ => "linear_attention",
            })
            .collect())
    }

    /// Layer kinds from `attn_layer_indices` (Bamba): the listed layers attend, the others
    /// are Mamba layers; null or absent, every layer is (as transformers builds the model).
    fn attention_layers(&self, n: usize) -> Vec<&'static str> {
        let listed: HashSet<u64> = self
            .text
            .attn_layer_indices
            .iter()
            .flatten()
            .flatten()
            .map(|w| w.0)
            .collect();
        (0..n as u64)
            .map(|i| {
                if listed.contains(&i) {
                    "full_attention"
                } else {
                    "mamba"
                }
            })
            .collect()
    }

    /// Each of the `n` layers' own head_dim where `per_layer_config` gives one (Gemma-style
    /// global layers: `{"05": {"head_dim": 512}}`), read in one pass.
    fn layer_head_dims(&self, n: usize) -> Result<Vec<Option<u64>>, FrequencyError> {
        let mut dims = vec![None; n];
        for (key, v) in self.text.per_layer_config.iter().flatten() {
            let (Some(i), Some(d)) = (key.parse::<usize>().ok(), v.get("head_dim")) else {
                continue;
            };
            // The first key naming a layer wins ("05" before "5").
            let Some(slot @ None) = dims.get_mut(i) else {
                continue;
            };
            *slot = Some(d.as_u64().ok_or_else(|| FrequencyError::ConfigKeyType {
                key: format!("per_layer_config.{key}.head_dim"),
                message: format!("expected a whole number, found {d}"),
            })?);
        }
        Ok(dims)
    }

    /// [`Reader::partial`], except that an odd width w = `int(head_dim * partial)` is HF's
    /// `base^(-2j / w)` over w + 1 lanes (GLM-4.5's default), which is exactly
    /// `base'^(-2j / (w + 1))` with `base' = base^((w + 1) / w)`; only for the default rope
    /// type (the others size their formulas by the width).
    fn padded_partial(spec: RopeSpec, head_dim: u64, partial: f64) -> Result<LayerRope> {
        let odd = (head_dim as f64 * partial) as u64;
        if odd.is_multiple_of(2) || odd >= head_dim {
            return Ok(Self::partial(spec, head_dim, partial)?);
        }
        if spec.scaling != Scaling::Default {
            return Err(FrequencyError::InvalidConfigValue {
                key: "partial_rotary_factor".into(),
                expected: "an even rotary width where the rope type is not \"default\" \
                           (its formulas are sized by the width)",
                found: format!("{partial} (head_dim {head_dim}: {odd} lanes)"),
            }
            .into());
        }
        let padded = spec.base.powf((odd + 1) as f64 / odd as f64);
        Ok(LayerRope {
            spec: spec.base(padded).rotary_dim(odd + 1),
            head_dim,
            hf_order: OutputOrder::Pairs,
        })
    }

    /// The RoPE of one layer kind of a table family (`own_head_dim`: the layer's own).
    fn rules_layer(
        &self,
        rules: &Rules,
        kind: &str,
        own_head_dim: Option<u64>,
    ) -> Result<LayerRope> {
        let dict = self.kind_dict(kind)?;
        let (scaling, _) = self.scaling(&dict, None)?;
        let base = dict
            .rope_theta
            .or(self.text.rope_theta)
            .or(rules.default_theta)
            .unwrap_or(10_000.0);
        // MLA rotates the whole `qk_rope_head_dim` slice: HF's factor there sizes its
        // frequencies from the full head (head_dim * factor = qk_rope_head_dim).
        let mla = rules.mla && own_head_dim.is_none();
        let head_dim = if let Some(d) = own_head_dim {
            d
        } else if rules.mla {
            self.text.qk_rope_head_dim.map_or(64, |w| w.0)
        } else {
            // A class with a head_dim default of its own keeps it when the file has none;
            // otherwise hidden_size / num_attention_heads, as `__post_init__` derives it.
            match (self.text.head_dim, rules.head_dim) {
                (None, Some(d)) => d,
                _ => self.head_dim(None)?,
            }
        };
        let (layout, order) = match rules.layout {
            TableLayout::HalfSplit => (PairLayout::HalfSplit, OutputOrder::Pairs),
            TableLayout::Interleaved => (PairLayout::Interleaved, OutputOrder::Pairs),
            TableLayout::InterleavedHfOrder => (PairLayout::Interleaved, OutputOrder::PairHalves),
        };
        // `proportional` rotates the whole head (its factor zeroes frequencies instead).
        let partial = match scaling {
            _ if mla => 1.0,
            crate::frequencies::Scaling::Proportional { .. } => 1.0,
            _ => self
                .partial_rotary_factor(&dict)
                .or(rules.partial_rotary_factor)
                .unwrap_or(1.0),
        };
        let mut spec = RopeSpec::new()
            .base(base)
            .pair_layout(layout)
            .scaling(scaling)
            .inverse(rules.inverse);
        if let Some(m) = &rules.mrope {
            spec = spec.mrope_order(m.section(dict.mrope_section), m.order);
        }
        let mut rope = if rules.odd_width_pads {
            Self::padded_partial(spec, head_dim, partial)?
        } else {
            Self::partial(spec, head_dim, partial)?
        };
        rope.hf_order = order;
        Ok(rope)
    }
}
