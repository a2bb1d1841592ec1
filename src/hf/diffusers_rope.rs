//! The rotary embedding a diffusers transformer applies to its queries and keys, read from its
//! `config.json` (`_class_name` and the keys its constructor passes to the rotary module), as
//! diffusers 0.42 builds it.

use serde_json::Value;

use super::diffusers::{Keys, read_class};
use crate::error::{Error, FrequencyError, Result};
use crate::spec::{PairLayout, RopeSpec};

/// The diffusers transformers that hold no rotary module (`tests/data/diffusers/
/// rope_configs.json`; `tests/rope_axes.rs` checks the list against it). Some of them rotate
/// by a table their pipeline builds and passes in (HunyuanDiT, CogVideoX, ConsisID,
/// Lumina-Next, Allegro, Stable Audio) or a method of the transformer builds (JoyImage Edit,
/// Wan-Animate 2, ACE-Step): those are not read from the config yet.
pub const DIFFUSERS_WITHOUT_ROPE_MODULE: [&str; 25] = [
    "AceStepTransformer1DModel",
    "AllegroTransformer3DModel",
    "AuraFlowTransformer2DModel",
    "CogVideoXTransformer3DModel",
    "CogView3PlusTransformer2DModel",
    "ConsisIDTransformer3DModel",
    "DiTTransformer2DModel",
    "DreamLiteTransformer2DModel",
    "HunyuanDiT2DControlNetModel",
    "HunyuanDiT2DModel",
    "HunyuanDiT2DMultiControlNetModel",
    "JoyImageEditPlusTransformer3DModel",
    "JoyImageEditTransformer3DModel",
    "LatteTransformer3DModel",
    "LongCatAudioDiTVae",
    "LuminaNextDiT2DModel",
    "PixArtTransformer2DModel",
    "PriorTransformer",
    "RFD4ProteinaTransformer",
    "SD3Transformer2DModel",
    "SanaTransformer2DModel",
    "StableAudioDiTModel",
    "Transformer2DModel",
    "TransformerTemporalModel",
    "WanAnimate2Transformer3DModel",
];

/// The diffusers transformers whose rotary module the crate does not read yet, with the
/// module and what it does that [`RopeSpec`] does not express.
pub const DIFFUSERS_ROPE_NOT_READ: [(&str, &str, &str); 30] = [
    (
        "AnyFlowFARTransformer3DModel",
        "AnyFlowCausalRotaryPosEmbed",
        "a Wan grid with compressed context tokens at half-integer positions, made from a layout object at call time: not checked yet",
    ),
    (
        "AnyFlowTransformer3DModel",
        "AnyFlowRotaryPosEmbed",
        "a Wan grid made from a layout object at call time: not checked yet",
    ),
    (
        "Cosmos3OmniTransformer",
        "Cosmos3VLTextRotaryEmbedding",
        "interleaved M-RoPE sections (24, 20, 20) over half-split pairs with vision positions past 15 000: not checked yet",
    ),
    (
        "CosmosTransformer3DModel",
        "CosmosRotaryPosEmbed",
        "a theta of its own per axis (an NTK factor from rope_scale) and fps-scaled temporal positions",
    ),
    (
        "EasyAnimateTransformer3DModel",
        "EasyAnimateRotaryPosEmbed",
        "float positions of a linspace crop grid: not checked yet",
    ),
    (
        "ErnieImageTransformer2DModel",
        "ErnieImageEmbedND3",
        "angles repeated per pair (interleaved) but applied with rotate-half: the two elements of a pair turn by different angles, not a rotation",
    ),
    (
        "Flux2Transformer2DModel",
        "Flux2PosEmbed",
        "four position axes (the crate has three)",
    ),
    (
        "Flux3Transformer2DModel",
        "Flux3PosEmbed",
        "four position axes (the crate has three)",
    ),
    (
        "HeliosTransformer3DModel",
        "HeliosRotaryPosEmbed",
        "history tokens take averaged cos and sin of 2x and 4x blocks: not a rotation at one position",
    ),
    (
        "HiDreamImageTransformer2DModel",
        "HiDreamImageEmbedND",
        "its default axes_dims_rope (32, 32) does not match its three id axes (diffusers fails on it too); published configs: not checked yet",
    ),
    (
        "HunyuanVideoFramepackTransformer3DModel",
        "HunyuanVideoFramepackRotaryPosEmbed",
        "history tokens take averaged cos and sin of 2x and 4x blocks: not a rotation at one position",
    ),
    (
        "Ideogram4Transformer2DModel",
        "Ideogram4MRoPE",
        "interleaved M-RoPE sections (24, 20, 20) over half-split pairs at positions past 65 536: not checked yet",
    ),
    (
        "Kandinsky5Transformer3DModel",
        "Kandinsky5RoPE3D",
        "a per-axis scale factor",
    ),
    (
        "Kandinsky6SRTransformer3DModel",
        "Kandinsky6SRRoPE3D",
        "a per-axis scale factor",
    ),
    (
        "Kandinsky6Transformer3DModel",
        "Kandinsky6RoPE3D",
        "a per-axis scale factor",
    ),
    (
        "LTX2VideoTransformer3DModel",
        "LTX2AudioVideoRotaryPosEmbed",
        "frequencies increasing from pi/2 and fractional coordinates",
    ),
    (
        "LTXVideoTransformer3DModel",
        "LTXVideoRotaryPosEmbed",
        "frequencies increasing from pi/2 and fractional coordinates",
    ),
    (
        "LongCatAudioDiTTransformer",
        "AudioDiTRotaryEmbedding",
        "a 1-D audio RoPE, not checked yet",
    ),
    (
        "Lumina2Transformer2DModel",
        "Lumina2RotaryPosEmbed",
        "caption and image positions made with the attention mask at call time: not checked yet",
    ),
    (
        "MiniMaxH3Transformer3DModel",
        "MiniMaxH3RotaryPosEmbed",
        "half-split pairs over a 96-channel prefix at float positions: not checked yet",
    ),
    (
        "MiniMaxMusic3Transformer1DModel",
        "MiniMaxMusic3RotaryEmbedding",
        "a 1-D audio RoPE, not checked yet",
    ),
    (
        "MochiTransformer3DModel",
        "MochiRoPE",
        "learned per-head frequencies",
    ),
    (
        "NucleusMoEImageTransformer2DModel",
        "NucleusMoEEmbedRope",
        "Qwen-Image's centered grid with text on the diagonal, not read from config yet",
    ),
    (
        "OmniGenTransformer2DModel",
        "OmniGenSuScaledRotaryEmbedding",
        "a 1-D LongRoPE (su) over text and image ids, not checked yet",
    ),
    (
        "PRXTransformer2DModel",
        "PRXEmbedND",
        "two axes, not checked yet",
    ),
    (
        "QwenImage21Transformer2DModel",
        "QwenImage21Rope",
        "Qwen-Image's centered grid with an image pad mask, not read from config yet",
    ),
    (
        "QwenImageTransformer2DModel",
        "QwenEmbedRope",
        "Qwen-Image's centered grid with text on the diagonal, not read from config yet",
    ),
    (
        "SanaWMLTX2RefinerTransformer3DModel",
        "SanaWMLTX2AudioVideoRotaryPosEmbed",
        "frequencies increasing from pi/2 and fractional coordinates (LTX-2's)",
    ),
    (
        "SanaWMTransformer3DModel",
        "SanaWMRotaryPosEmbed",
        "its own frame/height/width split, not checked yet",
    ),
    (
        "StableAudio3DiTModel",
        "StableAudio3RotaryEmbedding",
        "a 1-D audio RoPE over part of the head, not checked yet",
    ),
];

/// The rotary embedding of a diffusers transformer: what its rotary module computes for the
/// positions it is given, and how the attention applies it.
#[derive(Clone, Debug, PartialEq)]
pub struct DiffusersRope {
    /// The module's attribute in the model (`pos_embed`, `rope`, `rotary_emb`, ...).
    pub path: &'static str,
    /// diffusers' class of the module (`FluxPosEmbed`, `WanRotaryPosEmbed`, ...).
    pub module: &'static str,
    /// The rotation: [`RopeSpec::axes_rope`] with each axis's width (pairs, `[t, h, w]`;
    /// two-axis models leave `t` at 0 and read rows 1 and 2 of the positions), the module's
    /// theta, its pair layout, and the rotated width where it is less than the head.
    pub spec: RopeSpec,
    /// The attention head's width (`attention_head_dim`, or the axes' sum where the config
    /// names none).
    pub head_dim: u64,
}

/// The axes' widths (elements) of a rule.
#[derive(Clone, Copy)]
enum Widths {
    /// A key of the config (a list of two or three even widths), with diffusers' default.
    Key(&'static str, &'static [u64]),
    /// Wan's split of `attention_head_dim`: `h = w = 2 * (d / 6)`, `t = d - h - w`.
    Wan,
    /// CogView4's: `[d / 2, d / 2]` over height and width.
    HalfEach,
}

/// The theta of a rule.
#[derive(Clone, Copy)]
enum Theta {
    Fixed(f64),
    Key(&'static str, f64),
}

/// How a class builds its rotary module.
struct Rule {
    path: &'static str,
    module: &'static str,
    widths: Widths,
    theta: Theta,
    layout: PairLayout,
}

/// FLUX's axes `(16, 56, 56)`.
const FLUX_AXES: &[u64] = &[16, 56, 56];
/// HunyuanVideo's axes `(16, 56, 56)`.
const HY_AXES: &[u64] = &[16, 56, 56];
/// Z-Image's, Bria Fibo 2's and Krea 2's axes `(32, 48, 48)`.
const Z_AXES: &[u64] = &[32, 48, 48];

fn rule(class: &str) -> Option<Rule> {
    let il = PairLayout::Interleaved;
    let axes = |path, module, key, default, theta| Rule {
        path,
        module,
        widths: Widths::Key(key, default),
        theta,
        layout: il,
    };
    Some(match class {
        "FluxTransformer2DModel" | "ChromaTransformer2DModel" => axes(
            "pos_embed",
            "FluxPosEmbed",
            "axes_dims_rope",
            FLUX_AXES,
            Theta::Fixed(1e4),
        ),
        "LongCatImageTransformer2DModel" => axes(
            "pos_embed",
            "LongCatImagePosEmbed",
            "axes_dims_rope",
            FLUX_AXES,
            Theta::Fixed(1e4),
        ),
        "OvisImageTransformer2DModel" => axes(
            "pos_embed",
            "OvisImagePosEmbed",
            "axes_dims_rope",
            FLUX_AXES,
            Theta::Fixed(1e4),
        ),
        "BriaTransformer2DModel" => axes(
            "pos_embed",
            "BriaEmbedND",
            "axes_dims_rope",
            FLUX_AXES,
            Theta::Key("rope_theta", 1e4),
        ),
        "BriaFiboTransformer2DModel" => axes(
            "pos_embed",
            "BriaFiboEmbedND",
            "axes_dims_rope",
            FLUX_AXES,
            Theta::Key("rope_theta", 1e4),
        ),
        "Krea2Transformer2DModel" => axes(
            "rotary_emb",
            "Krea2RotaryPosEmbed",
            "axes_dims_rope",
            Z_AXES,
            Theta::Key("rope_theta", 1000.0),
        ),
        "ZImageTransformer2DModel" | "BriaFibo2Transformer2DModel" => axes(
            "rope_embedder",
            "RopeEmbedder",
            "axes_dims",
            Z_AXES,
            Theta::Key("rope_theta", 256.0),
        ),
        "HunyuanVideoTransformer3DModel" => axes(
            "rope",
            "HunyuanVideoRotaryPosEmbed",
            "rope_axes_dim",
            HY_AXES,
            Theta::Key("rope_theta", 256.0),
        ),
        "HunyuanVideo15Transformer3DModel" => axes(
            "rope",
            "HunyuanVideo15RotaryPosEmbed",
            "rope_axes_dim",
            HY_AXES,
            Theta::Key("rope_theta", 256.0),
        ),
        "MotifVideoTransformer3DModel" => axes(
            "rope",
            "MotifVideoRotaryPosEmbed",
            "rope_axes_dim",
            HY_AXES,
            Theta::Key("rope_theta", 256.0),
        ),
        "HunyuanImageTransformer2DModel" => axes(
            "rope",
            "HunyuanImageRotaryPosEmbed",
            "rope_axes_dim",
            &[64, 64],
            Theta::Key("rope_theta", 256.0),
        ),
        "WanTransformer3DModel"
        | "WanVACETransformer3DModel"
        | "WanAnimateTransformer3DModel"
        | "SanaVideoTransformer3DModel" => Rule {
            path: "rope",
            module: "WanRotaryPosEmbed",
            widths: Widths::Wan,
            theta: Theta::Fixed(1e4),
            layout: il,
        },
        "SkyReelsV2Transformer3DModel" => Rule {
            path: "rope",
            module: "SkyReelsV2RotaryPosEmbed",
            widths: Widths::Wan,
            theta: Theta::Fixed(1e4),
            layout: il,
        },
        "ChronoEditTransformer3DModel" => Rule {
            path: "rope",
            module: "ChronoEditRotaryPosEmbed",
            widths: Widths::Wan,
            theta: Theta::Fixed(1e4),
            layout: il,
        },
        "CogView4Transformer2DModel" => Rule {
            path: "rope",
            module: "CogView4RotaryPosEmbed",
            widths: Widths::HalfEach,
            theta: Theta::Fixed(1e4),
            layout: PairLayout::HalfSplit,
        },
        "GlmImageTransformer2DModel" => Rule {
            path: "rope",
            module: "GlmImageRotaryPosEmbed",
            widths: Widths::HalfEach,
            theta: Theta::Fixed(1e4),
            layout: PairLayout::HalfSplit,
        },
        _ => return None,
    })
}

/// The refusal of a class whose rotary module is not read, if it is one.
fn not_read(class: &str) -> Option<Error> {
    DIFFUSERS_ROPE_NOT_READ
        .iter()
        .find(|(c, ..)| *c == class)
        .map(|&(c, module, reason)| {
            Error::Frequency(FrequencyError::DiffusersRopeNotRead {
                class: c.to_string(),
                module,
                reason,
            })
        })
}

/// A list of two or three positive even widths (elements) under `key`, or the default.
fn widths(keys: &Keys<'_>, key: &str, default: &[u64]) -> Result<Vec<u64>> {
    let need = "a list of two or three positive even widths";
    let Some(v) = keys.0.get(key).filter(|v| !v.is_null()) else {
        return Ok(default.to_vec());
    };
    let list: Option<Vec<u64>> = v.as_array().and_then(|a| {
        a.iter()
            .map(|x| {
                x.as_u64()
                    .filter(|&n| n > 0 && n % 2 == 0 && n <= RopeSpec::MAX_HEAD_DIM)
            })
            .collect()
    });
    match list {
        Some(l) if (2..=3).contains(&l.len()) => Ok(l),
        _ => Err(Keys::bad(key, need, Some(v))),
    }
}

impl DiffusersRope {
    /// The rotary embedding of a diffusers transformer, from its `config.json` (feature
    /// `hf-config`): FLUX.1 and the classes that copy its `FluxPosEmbed` (Chroma, LongCat-
    /// Image, Ovis-Image, Bria, Bria Fibo, Krea 2), Z-Image and Bria Fibo 2, HunyuanVideo 1 and
    /// 1.5, Motif-Video, HunyuanImage (two axes), Wan 2.x and its VACE and Animate variants,
    /// Sana-Video, SkyReels-V2, ChronoEdit, CogView4 and GLM-Image (two axes, half-split).
    /// Each module's positions are the caller's ([`Positions::Axes`](crate::Positions::Axes)
    /// or `FloatAxes`): FLUX's ids as its pipeline makes them, Wan's and HunyuanVideo's
    /// `(frame, row, column)` of the patch grid, CogView4's `row * rope_axes_dim[0] / rows`.
    /// `Ok(None)` for a transformer with no rotary module
    /// ([`DIFFUSERS_WITHOUT_ROPE_MODULE`]); a class whose module the crate does not read
    /// ([`DIFFUSERS_ROPE_NOT_READ`]) is an error that names it and says why, as is an
    /// unknown `_class_name` or a bad key.
    pub fn from_diffusers_config(config: &Value) -> Result<Option<Self>> {
        let (keys, class) = read_class(config)?;
        if let Some(e) = not_read(class) {
            return Err(e);
        }
        let Some(rule) = rule(class) else {
            return match DIFFUSERS_WITHOUT_ROPE_MODULE.contains(&class) {
                true => Ok(None),
                false => Err(keys.unknown_class()),
            };
        };
        let head = keys.opt_u("attention_head_dim")?;
        let dims = match rule.widths {
            Widths::Key(key, default) => widths(&keys, key, default)?,
            Widths::Wan => {
                let d = head.unwrap_or(128);
                let hw = 2 * (d / 6);
                vec![d - 2 * hw, hw, hw]
            }
            Widths::HalfEach => {
                let d = head.unwrap_or(40);
                if d % 4 != 0 {
                    return Err(Keys::bad(
                        "attention_head_dim",
                        "a multiple of 4 (two axes of even widths)",
                        Some(&d.into()),
                    ));
                }
                vec![d / 2, d / 2]
            }
        };
        let rotated: u64 = dims.iter().sum();
        let head_dim = head.unwrap_or(rotated);
        if rotated > head_dim || dims.iter().any(|&w| w % 2 != 0) {
            return Err(Keys::bad(
                "attention_head_dim",
                "at least the axes' widths' sum, each width even",
                Some(&head_dim.into()),
            ));
        }
        let theta = match rule.theta {
            Theta::Fixed(t) => t,
            Theta::Key(key, default) => keys.opt_f(key)?.unwrap_or(default),
        };
        let section = match dims[..] {
            [h, w] => [0, h / 2, w / 2],
            [t, h, w] => [t / 2, h / 2, w / 2],
            _ => return Err(Keys::bad("axes", "two or three widths", None)),
        };
        let mut spec = RopeSpec::new()
            .base(theta)
            .pair_layout(rule.layout)
            .axes_rope(section);
        if rotated < head_dim {
            spec = spec.rotary_dim(rotated);
        }
        spec.validate(head_dim)?;
        Ok(Some(Self {
            path: rule.path,
            module: rule.module,
            spec,
            head_dim,
        }))
    }
}
