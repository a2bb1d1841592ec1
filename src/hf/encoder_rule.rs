//! What a row of the encoders' tables says: where a model type keeps a rotary module's config,
//! the module's path and class, and the form of its rotation (`vision_rope_rules.rs` for the
//! towers, `encoder_rope_rules.rs` for the 1-D encoders, read by `vision_rope.rs`).

pub(super) use super::diffusers_rope::PositionAxis;
use crate::spec::PairLayout;

/// How a vision rotary module lays its frequencies over the head (`d` wide, `F = d / 4`
/// frequencies `theta^(-2k/(d/2))` per spatial axis unless said otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Form {
    /// `[h.. | w..]` twice, half-split pairs: height on the first `F` pairs, width on the
    /// next `F` (Qwen2-VL and the towers that copy it).
    Halves,
    /// Pixtral: one list over the head, `theta^(-2i/d)`, height on the even entries and
    /// width on the odd ones.
    Dealt,
    /// Kimi K2.5: `w0 h0 w1 h1 ..` twice, half-split pairs.
    WidthFirstAlternating,
    /// Step 3.7: `[w.. | h..]` twice, half-split pairs.
    WidthFirstBlocks,
    /// Gemma 4: `[w.. | w..]` then `[h.. | h..]`, each axis half-split within its own half
    /// of the head (`apply_multidimensional_rope`), the column first (the processor's
    /// `(x, y)` position ids).
    AxisBlocks,
    /// Inkling 2: `[w.. | h..]` with each angle repeated, interleaved pairs.
    WidthFirstInterleaved,
    /// timm's PE ViT (PE Video's frame encoder, `RotaryEmbeddingCat`): as
    /// `WidthFirstInterleaved`, its head width and temperature those of the timm architecture
    /// the `TimmWrapper` config names.
    TimmPe,
    /// DINOv3 and Sapiens2: `[h.. | w..]` twice, half-split pairs, `theta^(-4k/d)`
    /// revolutions per unit coordinate (`2 pi c / period`) over patch-centre coordinates in
    /// `[-1, 1]`.
    Periods,
    /// EfficientLoFTR: the whole width (`hidden_size`) before the head split, interleaved
    /// pairs, pair `2k` on the row and `2k + 1` on the column, both `theta^(-2k/(d/2))` for
    /// `d / 4 = int(head_dim * partial_rotary_factor) / 2` frequencies.
    Hidden,
    /// MiniMax M3 VL: `(d / 3) / 2` frequencies per axis `t, h, w`, `[t.. | h.. | w..]`
    /// twice over the first `6 * ((d / 3) / 2)` lanes (half-split), the rest unrotated.
    Thirds,
    /// V-JEPA 2: `(d / 3) / 2` frequencies per axis `t, h, w`, each axis a block of
    /// `2 ((d / 3) / 2)` lanes over interleaved pairs with its cos and sin tiled `[f | f]`
    /// (`rotate_queries_or_keys`: the two elements of a pair at different angles), the rest
    /// unrotated; theta 10 000 whatever the config says.
    TiledThirds,
    /// 1-D over a frame's (residue's, patch's) index, transformers' default parameters:
    /// `theta^(-2i/r)` over the first `r = int(head_dim * partial_rotary_factor)` lanes, pairs
    /// as given (audio, codec, protein and time-series encoders).
    Line(PairLayout),
    /// CLVP's speech encoder: 1-D over the first `max(projection_dim / (2 heads), 32)`
    /// lanes, half-split, theta 10 000 whatever the config says.
    Clvp,
}

/// Where a family keeps its vision tower and what it builds there.
#[derive(Clone, Copy, Debug)]
pub(super) struct Rule {
    /// The top-level `model_type`.
    pub(super) model_type: &'static str,
    /// The keys from the top level to the vision sub-config (empty: the top level).
    pub(super) sub: &'static [&'static str],
    /// The module's path in the model.
    pub(super) path: &'static str,
    /// transformers' class of the module.
    pub(super) module: &'static str,
    pub(super) form: Form,
    /// The key of the tower's width (`hidden_size`; Qwen2-VL's `embed_dim`).
    pub(super) width_key: &'static str,
    /// The sub-config class's defaults: width, heads, `head_dim`, theta.
    pub(super) defaults: (u64, u64, Option<u64>, f64),
    /// The key of the heads where it is neither `num_heads` nor `num_attention_heads`
    /// (Moonshine's encoder: `encoder_num_attention_heads`).
    pub(super) heads_key: Option<&'static str>,
    /// The default `partial_rotary_factor` of a 1-D module's config class.
    pub(super) partial: f64,
    /// The `rope_type` the module takes (`axial` for the towers, `default` for 1-D
    /// encoders); `None` where the module reads only the theta (Llama 4's tower).
    pub(super) rope_type: Option<&'static str>,
    /// A further divisor of the width, 1 by default (SAM's memory attention:
    /// `memory_attention_downsample_rate`).
    pub(super) divisor_key: Option<&'static str>,
    /// What the module's positions index: tokens, or (NeuCodec, Xcodec2) heads.
    pub(super) position_axis: PositionAxis,
}

/// A row of the common shape: `width_key` over the heads (`num_heads` or
/// `num_attention_heads`), the whole head's width where 1-D, the `rope_type` the form takes
/// (`default` for 1-D modules, `axial` for towers), no further divisor.
pub(super) const fn rule(
    model_type: &'static str,
    sub: &'static [&'static str],
    path: &'static str,
    module: &'static str,
    form: Form,
    width_key: &'static str,
    defaults: (u64, u64, Option<u64>, f64),
) -> Rule {
    Rule {
        model_type,
        sub,
        path,
        module,
        form,
        width_key,
        defaults,
        heads_key: None,
        partial: 1.0,
        rope_type: match form {
            Form::Line(_) | Form::Clvp | Form::Hidden => Some("default"),
            _ => Some("axial"),
        },
        divisor_key: None,
        position_axis: PositionAxis::Token,
    }
}
