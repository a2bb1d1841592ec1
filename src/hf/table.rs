//! The reading rules of the transformers families that need no code of their own: one table,
//! `families.json`, written by `tests/data/hf/rope_families.py` from transformers 5.24 itself
//! (each family's model run on the meta device with its rotation recorded, its pair layout
//! from unit vectors through HF's own rotation, its config class's defaults). Nobody edits it
//! by hand; `tests/hf_families.rs` checks every family against HF's own rotations.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use super::config::Whole;
use crate::spec::MRopeOrder;
use serde_json::Value;

/// How a family's HF code pairs lanes and orders its output.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(super) enum TableLayout {
    /// `rotate_half`: lane j with lane j + r/2.
    HalfSplit,
    /// `rotate_every_two` / complex pairs: lane 2j with 2j + 1, output in place.
    Interleaved,
    /// DeepSeek's `apply_rotary_pos_emb_interleave`: pairs (2j, 2j + 1), output as all first
    /// elements, then all second elements.
    InterleavedHfOrder,
}

/// Which layers of a family rotate (besides layers without attention, `linear_attention`
/// and `conv`, which never do).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(super) enum Gate {
    /// Every attention layer.
    All,
    /// Only `sliding_attention` layers (Cohere 2: a layer's window is the config's for
    /// sliding layers, none for full ones, and only a layer with a window rotates).
    SlidingOnly,
    /// Only `sliding_attention` layers, or every layer when `sliding_window` is null
    /// (EXAONE 4: `if self.sliding_window is None or self.is_sliding`).
    SlidingUnlessNoWindow,
    /// Layer i rotates when `no_rope_layers[i]` is truthy (SmolLM3); without the list, every
    /// `no_rope_layer_interval`-th layer (default 4) does not.
    NoRopeLayers,
    /// Every layer except those in `cross_attention_layers` (Mllama).
    NotCrossAttention,
    /// Only the layers in `attn_layer_indices`; the others are Mamba layers (Bamba).
    AttentionLayerIndices,
}

/// One family's rules.
#[derive(Clone, Debug, Deserialize)]
pub(super) struct Rules {
    pub layout: TableLayout,
    /// The family rotates by -θ (NanoChat's `rotate_half` is `(x2, -x1)`).
    pub inverse: bool,
    /// The config class's `default_theta`, used when no `rope_theta` is given.
    pub default_theta: Option<f64>,
    /// The partial rotary factor the config class assumes when the file gives none.
    pub partial_rotary_factor: Option<f64>,
    /// The config class's `head_dim` default where it is a number (else
    /// `hidden_size / num_attention_heads`).
    pub head_dim: Option<u64>,
    /// The config class's default `num_hidden_layers`.
    pub layers: u64,
    pub gate: Gate,
    /// Without `layer_types`, every n-th layer is full attention and the others slide (the
    /// class's own default n, where it derives the layer types so).
    pub sliding_window_pattern: Option<u64>,
    /// M-RoPE: which position axis each pair reads, as the crate's sections (the config's
    /// `mrope_section` wins over the default here).
    pub mrope: Option<TableMrope>,
    /// Multi-head latent attention: the rotated head is `qk_rope_head_dim` wide.
    pub mla: bool,
    /// The class's `attribute_map`: a standard key (`hidden_size`) the file writes under
    /// the family's own name (DBRX: `d_model`).
    #[serde(default)]
    pub attribute_map: BTreeMap<String, String>,
    /// Dory: a file's `layer_types` lists an `"mlp"` block after each layer's attention block,
    /// and `num_hidden_layers` counts both; the class keeps every other one and halves it.
    #[serde(default)]
    pub mlp_blocks: bool,
    /// An odd `int(head_dim * partial_rotary_factor)` = w is not refused: HF's frequencies are
    /// `base^(-2j / w)` and it rotates w + 1 lanes (GLM-4.5's default config).
    #[serde(default)]
    pub odd_width_pads: bool,
}

impl Rules {
    /// The text config as the family's class reads it, where that differs from the file
    /// (`attribute_map`, Dory's blocks); `None` where it is the file.
    pub(super) fn class_view(&self, text: &Value) -> Option<Value> {
        if self.attribute_map.is_empty() && !self.mlp_blocks {
            return None;
        }
        let mut t = text.as_object()?.clone();
        for (standard, own) in &self.attribute_map {
            if let Some(v) = t.get(own).cloned() {
                t.insert(standard.clone(), v);
            }
        }
        if self.mlp_blocks
            && let Some(Value::Array(blocks)) = t.get("layer_types")
            && blocks.iter().any(|b| b == "mlp")
        {
            let kinds: Vec<Value> = blocks.iter().step_by(2).cloned().collect();
            t.insert("layer_types".into(), Value::Array(kinds));
            if let Some(n) = t.get("num_hidden_layers").and_then(Value::as_u64) {
                t.insert("num_hidden_layers".into(), Value::from(n / 2));
            }
        }
        Some(Value::Object(t))
    }
}

/// A family's M-RoPE, as transformers' rotary module reads the axes.
#[derive(Clone, Debug, Deserialize)]
pub(super) struct TableMrope {
    /// Pairs per axis (t, h, w) of the default config.
    pub section: [u64; 3],
    /// Which pairs read which axis.
    pub order: MRopeOrder,
    /// The axis each entry of the config's `mrope_section` counts, in the file's order
    /// (`"thw"`; ERNIE 4.5 VL: `"hwt"`).
    pub section_keys: String,
}

impl TableMrope {
    /// Pairs per axis `[t, h, w]`: the file's `mrope_section` read in the family's key
    /// order, else the default config's.
    pub(super) fn section(&self, file: Option<[Whole; 3]>) -> [u64; 3] {
        let Some(entries) = file else {
            return self.section;
        };
        let mut section = [0; 3];
        for (key, w) in self.section_keys.bytes().zip(entries) {
            let axis = match key {
                b'h' => 1,
                b'w' => 2,
                _ => 0,
            };
            section[axis] = w.0;
        }
        section
    }
}

#[derive(Deserialize)]
struct Table {
    families: BTreeMap<String, Rules>,
    refused: BTreeMap<String, String>,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        serde_json::from_str(include_str!("families.json"))
            .expect("src/hf/families.json is written by tests/data/hf/rope_families.py")
    })
}

/// The rules of family `name` (a text `model_type`, `_text` dropped).
pub(super) fn rules(name: &str) -> Option<&'static Rules> {
    table().families.get(name)
}

/// Why family `name` is in transformers but not read (`None`: not a transformers RoPE family).
pub(super) fn refused(name: &str) -> Option<&'static str> {
    table().refused.get(name).map(String::as_str)
}

/// Every family the table reads.
pub(super) fn names() -> impl Iterator<Item = &'static str> {
    table().families.keys().map(String::as_str)
}
