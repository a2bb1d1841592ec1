//! The rotary embedding a diffusers transformer applies to its queries and keys, read from its
//! `config.json` (`_class_name` and the keys its constructor passes to the rotary module), as
//! diffusers 0.42 builds it.

use serde_json::Value;

use super::diffusers::{Keys, read_class};
use crate::error::{Error, FrequencyError, Result};
use crate::frequencies::Scaling;
use crate::spec::{MRopeOrder, PairLayout, RopeSpec};

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
pub const DIFFUSERS_ROPE_NOT_READ: [(&str, &str, &str); 10] = [
    (
        "AnyFlowFARTransformer3DModel",
        "AnyFlowCausalRotaryPosEmbed",
        "its compressed context tokens take average-pooled complex frequencies: not a rotation at one position",
    ),
    (
        "ErnieImageTransformer2DModel",
        "ErnieImageEmbedND3",
        "angles repeated per pair (interleaved) but applied with rotate-half: the two elements of a pair turn by different angles, not a rotation",
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
        "MochiTransformer3DModel",
        "MochiRoPE",
        "learned per-head frequencies",
    ),
    (
        "SanaWMLTX2RefinerTransformer3DModel",
        "SanaWMLTX2AudioVideoRotaryPosEmbed",
        "frequencies increasing from pi/2 and fractional coordinates (LTX-2's)",
    ),
    (
        "SanaWMTransformer3DModel",
        "SanaWMRotaryPosEmbed",
        "its camera branch re-slices the table for a half-width head (the first lists of each axis): not read yet",
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
    /// two-axis models leave `t` at 0 and read rows 1 and 2 of the positions), or a 1-D
    /// RoPE (audio and text modules); the module's theta, its pair layout, and the rotated
    /// width where it is less than the head.
    pub spec: RopeSpec,
    /// The attention head's width (`attention_head_dim`, or the axes' sum where the config
    /// names none).
    pub head_dim: u64,
}

/// What a module rotates, and by which frequencies.
#[derive(Clone, Copy)]
enum Form {
    /// Two or three axes, each its own list: a key of the config (a list of widths, in
    /// elements) with diffusers' default.
    Axes(&'static str, &'static [u64]),
    /// Wan's split of the head: `h = w = 2 * (d / 6)`, `t = d - h - w`.
    Wan,
    /// CogView4's: `[d / 2, d / 2]` over height and width.
    HalfEach,
    /// `get_3d_rotary_pos_embed`'s (EasyAnimate): `[d / 4, 3 d / 8, 3 d / 8]`.
    Quarter,
    /// MiniMax H3's: three axes of `2 n` lanes each (`n` a key with its default).
    Shared(&'static str, u64),
    /// Cosmos': Wan's split of the head, each axis's theta `10 000 * s^(d / (d - 2))` for
    /// its `rope_scale` entry `s` and width `d` (NTK factors).
    Cosmos,
    /// 1-D RoPE over the whole head.
    Head,
    /// 1-D RoPE over the first lanes: a key with its default (MiniMax Music 3's
    /// `rotary_dim`).
    Prefix(&'static str, u64),
    /// 1-D RoPE over the first half of the head (Stable Audio 3's).
    HalfHead,
    /// One list over the head's pairs, the pairs' axes interleaved as Qwen3-VL's
    /// ([`MRopeOrder::Interleaved`]): `[t, h, w]` pairs under a key with its default, the
    /// temporal axis taking every pair past the spatial ones.
    Interleaved(&'static str, [u64; 3]),
}

/// The theta of a rule: a constant, or a key with diffusers' default.
#[derive(Clone, Copy)]
enum Theta {
    Fixed(f64),
    Key(&'static str, f64),
}

/// The head width of a class: a key with diffusers' default, the axes' sum, the sum of an
/// `axes_dims` key (Kandinsky's text module), or a model width over its heads.
#[derive(Clone, Copy)]
enum Head {
    Key(&'static str, u64),
    Sum,
    AxesSum(&'static str, &'static [u64]),
    /// The sum of the first key's widths, or where it is null of the second's (Kandinsky 6's
    /// audio tower: `axes_dims_a or axes_dims`).
    AxesSumOr(&'static str, &'static str, &'static [u64]),
    Over(&'static str, u64, &'static str, u64),
}

/// How a class builds one of its rotary modules.
#[derive(Clone, Copy)]
struct Rule {
    path: &'static str,
    module: &'static str,
    form: Form,
    theta: Theta,
    layout: PairLayout,
    head: Head,
}

const IL: PairLayout = PairLayout::Interleaved;
const HS: PairLayout = PairLayout::HalfSplit;
const HEAD: Head = Head::Key("attention_head_dim", 128);
const T4: Theta = Theta::Fixed(1e4);
/// FLUX's and HunyuanVideo's axes `(16, 56, 56)`.
const FLUX_AXES: &[u64] = &[16, 56, 56];
/// FLUX.2's and FLUX.3's four axes `(32, 32, 32, 32)`.
const FLUX2_AXES: &[u64] = &[32, 32, 32, 32];
/// Z-Image's, Bria Fibo 2's and Krea 2's axes `(32, 48, 48)`.
const Z_AXES: &[u64] = &[32, 48, 48];
/// Kandinsky 5's and 6 SR's axes `(16, 24, 24)`.
const K_AXES: &[u64] = &[16, 24, 24];

/// An interleaved rule over `attention_head_dim`.
const fn rule(path: &'static str, module: &'static str, form: Form, theta: Theta) -> Rule {
    Rule {
        path,
        module,
        form,
        theta,
        layout: IL,
        head: HEAD,
    }
}

/// `r` with another layout and head.
const fn with(mut r: Rule, layout: PairLayout, head: Head) -> Rule {
    r.layout = layout;
    r.head = head;
    r
}

/// The rules of a class's rotary modules, in the order the class builds them.
fn rules(class: &str) -> Option<Vec<Rule>> {
    let flux = |m| rule("pos_embed", m, Form::Axes("axes_dims_rope", FLUX_AXES), T4);
    let keyed = |m| {
        let theta = Theta::Key("rope_theta", 1e4);
        rule(
            "pos_embed",
            m,
            Form::Axes("axes_dims_rope", FLUX_AXES),
            theta,
        )
    };
    let hunyuan = |m, default| {
        let theta = Theta::Key("rope_theta", 256.0);
        rule("rope", m, Form::Axes("rope_axes_dim", default), theta)
    };
    let wan = |m| rule("rope", m, Form::Wan, T4);
    let glm = |m| {
        let head = Head::Key("attention_head_dim", 40);
        with(rule("rope", m, Form::HalfEach, T4), HS, head)
    };
    let kandinsky = |m| {
        let (form, head) = (
            Form::Axes("axes_dims", K_AXES),
            Head::AxesSum("axes_dims", K_AXES),
        );
        with(rule("visual_rope_embeddings", m, form, T4), IL, head)
    };
    let krea = Form::Axes("axes_dims_rope", Z_AXES);
    let z = Form::Axes("axes_dims", Z_AXES);
    let text = Head::AxesSum("axes_dims", K_AXES);
    let h3 = Form::Shared("rope_freq_dim", 16);
    Some(match class {
        "FluxTransformer2DModel" | "ChromaTransformer2DModel" => vec![flux("FluxPosEmbed")],
        "LongCatImageTransformer2DModel" => vec![flux("LongCatImagePosEmbed")],
        "Flux2Transformer2DModel" | "Flux3Transformer2DModel" => {
            let flux2 = class == "Flux2Transformer2DModel";
            let (module, theta) = match flux2 {
                true => ("Flux2PosEmbed", 2000.0),
                false => ("Flux3PosEmbed", 1e4),
            };
            let form = Form::Axes("axes_dims_rope", FLUX2_AXES);
            vec![rule(
                "pos_embed",
                module,
                form,
                Theta::Key("rope_theta", theta),
            )]
        }
        "OvisImageTransformer2DModel" => vec![flux("OvisImagePosEmbed")],
        "BriaTransformer2DModel" => vec![keyed("BriaEmbedND")],
        "BriaFiboTransformer2DModel" => vec![keyed("BriaFiboEmbedND")],
        "Krea2Transformer2DModel" => {
            let theta = Theta::Key("rope_theta", 1000.0);
            vec![rule("rotary_emb", "Krea2RotaryPosEmbed", krea, theta)]
        }
        "ZImageTransformer2DModel" | "BriaFibo2Transformer2DModel" => {
            let theta = Theta::Key("rope_theta", 256.0);
            let r = rule("rope_embedder", "RopeEmbedder", z, theta);
            vec![with(r, IL, Head::Sum)]
        }
        "HunyuanVideoTransformer3DModel" => vec![hunyuan("HunyuanVideoRotaryPosEmbed", FLUX_AXES)],
        "HunyuanVideo15Transformer3DModel" => {
            vec![hunyuan("HunyuanVideo15RotaryPosEmbed", FLUX_AXES)]
        }
        "MotifVideoTransformer3DModel" => vec![hunyuan("MotifVideoRotaryPosEmbed", FLUX_AXES)],
        "HunyuanImageTransformer2DModel" => {
            vec![hunyuan("HunyuanImageRotaryPosEmbed", &[64, 64])]
        }
        "WanTransformer3DModel"
        | "WanVACETransformer3DModel"
        | "WanAnimateTransformer3DModel"
        | "SanaVideoTransformer3DModel" => vec![wan("WanRotaryPosEmbed")],
        "SkyReelsV2Transformer3DModel" => vec![wan("SkyReelsV2RotaryPosEmbed")],
        "ChronoEditTransformer3DModel" => vec![wan("ChronoEditRotaryPosEmbed")],
        "AnyFlowTransformer3DModel" => vec![wan("AnyFlowRotaryPosEmbed")],
        "EasyAnimateTransformer3DModel" => {
            let r = rule(
                "rope_embedding",
                "EasyAnimateRotaryPosEmbed",
                Form::Quarter,
                T4,
            );
            vec![with(r, IL, Head::Key("attention_head_dim", 64))]
        }
        "CosmosTransformer3DModel" => {
            let r = rule("rope", "CosmosRotaryPosEmbed", Form::Cosmos, T4);
            vec![with(r, HS, HEAD)]
        }
        "CogView4Transformer2DModel" => vec![glm("CogView4RotaryPosEmbed")],
        "GlmImageTransformer2DModel" => vec![glm("GlmImageRotaryPosEmbed")],
        "Kandinsky5Transformer3DModel" => {
            let r = rule("text_rope_embeddings", "Kandinsky5RoPE1D", Form::Head, T4);
            vec![with(r, IL, text), kandinsky("Kandinsky5RoPE3D")]
        }
        "Kandinsky6SRTransformer3DModel" => vec![kandinsky("Kandinsky6SRRoPE3D")],
        "Kandinsky6Transformer3DModel" => {
            let visual = Form::Axes("axes_dims", Z_AXES);
            let head = Head::AxesSum("axes_dims", Z_AXES);
            let audio = Head::AxesSumOr("axes_dims_a", "axes_dims", Z_AXES);
            let one = |path, head| with(rule(path, "Kandinsky6RoPE1D", Form::Head, T4), IL, head);
            vec![
                with(
                    rule("visual_rope_embeddings", "Kandinsky6RoPE3D", visual, T4),
                    IL,
                    head,
                ),
                one("audio_rope_embeddings", audio),
                one("video_text_rope_embeddings", head),
                one("audio_text_rope_embeddings", audio),
            ]
        }
        "StableAudio3DiTModel" => {
            let r = rule(
                "rotary_pos_emb",
                "StableAudio3RotaryEmbedding",
                Form::HalfHead,
                T4,
            );
            vec![with(r, HS, Head::Over("embed_dim", 1536, "num_heads", 24))]
        }
        "LongCatAudioDiTTransformer" => {
            let theta = Theta::Fixed(1e5);
            let r = rule("rotary_embed", "AudioDiTRotaryEmbedding", Form::Head, theta);
            vec![with(r, HS, Head::Over("dit_dim", 1536, "dit_heads", 24))]
        }
        "MiniMaxMusic3Transformer1DModel" => {
            let form = Form::Prefix("rotary_dim", 32);
            let r = rule("rotary_emb", "MiniMaxMusic3RotaryEmbedding", form, T4);
            vec![with(r, HS, Head::Key("attention_head_dim", 64))]
        }
        "QwenImageTransformer2DModel" => vec![flux("QwenEmbedRope")],
        "NucleusMoEImageTransformer2DModel" => vec![flux("NucleusMoEEmbedRope")],
        "QwenImage21Transformer2DModel" => vec![flux("QwenImage21Rope")],
        "OmniGenTransformer2DModel" => {
            let r = rule(
                "rope",
                "OmniGenSuScaledRotaryEmbedding",
                Form::Head,
                Theta::Key("rope_base", 1e4),
            );
            vec![with(
                r,
                HS,
                Head::Over("hidden_size", 3072, "num_attention_heads", 32),
            )]
        }
        "Lumina2Transformer2DModel" => {
            let form = Form::Axes("axes_dim_rope", &[32, 32, 32]);
            let r = rule("rope_embedder", "Lumina2RotaryPosEmbed", form, T4);
            vec![with(
                r,
                IL,
                Head::Over("hidden_size", 2304, "num_attention_heads", 24),
            )]
        }
        "PRXTransformer2DModel" => {
            let form = Form::Axes("axes_dim", &[32, 32]);
            let r = rule("pe_embedder", "PRXEmbedND", form, Theta::Key("theta", 1e4));
            vec![with(
                r,
                IL,
                Head::Over("hidden_size", 1792, "num_heads", 28),
            )]
        }
        "Ideogram4Transformer2DModel" => {
            let form = Form::Interleaved("mrope_section", [24, 20, 20]);
            let theta = Theta::Key("rope_theta", 5e6);
            let r = rule("rotary_emb", "Ideogram4MRoPE", form, theta);
            vec![with(r, HS, Head::Key("attention_head_dim", 256))]
        }
        "Cosmos3OmniTransformer" => {
            let form = Form::Interleaved("rope_axes_dim", [24, 20, 20]);
            let theta = Theta::Key("rope_theta", 5e6);
            let r = rule("rotary_emb", "Cosmos3VLTextRotaryEmbedding", form, theta);
            vec![with(r, HS, Head::Key("head_dim", 128))]
        }
        "MiniMaxH3Transformer3DModel" => {
            let theta = Theta::Key("rope_theta", 1e4);
            vec![with(
                rule("rope", "MiniMaxH3RotaryPosEmbed", h3, theta),
                HS,
                HEAD,
            )]
        }
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
    // FLUX.2's and FLUX.3's four axes, or two or three.
    let (range, need) = match default.len() {
        4 => (4..=4, "a list of four positive even widths of at most 2^20"),
        _ => (
            2..=3,
            "a list of two or three positive even widths of at most 2^20",
        ),
    };
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
        Some(l) if range.contains(&l.len()) => Ok(l),
        _ => Err(Keys::bad(key, need, Some(v))),
    }
}

/// A positive key of at most [`RopeSpec::MAX_HEAD_DIM`], or its default.
fn width(keys: &Keys<'_>, key: &str, default: u64) -> Result<u64> {
    match keys.opt_u(key)? {
        Some(n) if n > RopeSpec::MAX_HEAD_DIM => {
            Err(Keys::bad(key, "a width of at most 2^20", Some(&n.into())))
        }
        n => Ok(n.unwrap_or(default)),
    }
}

/// The spatial sections `[h, w]` of a `[t, h, w]` list of pairs under `key` (or the default).
fn spatial(keys: &Keys<'_>, key: &str, default: [u64; 3]) -> Result<[u64; 2]> {
    let Some(v) = keys.0.get(key).filter(|v| !v.is_null()) else {
        return Ok([default[1], default[2]]);
    };
    let list: Option<Vec<u64>> = v.as_array().and_then(|a| {
        a.iter()
            .map(|x| x.as_u64().filter(|&n| n <= RopeSpec::MAX_HEAD_DIM))
            .collect()
    });
    match list.as_deref() {
        Some(&[_, h, w]) => Ok([h, w]),
        _ => Err(Keys::bad(
            key,
            "three section sizes [t, h, w] (pairs)",
            Some(v),
        )),
    }
}

/// Cosmos' theta per axis: `10 000 * s_a^(d_a / (d_a - 2))` for `rope_scale` `[s_t, s_h,
/// s_w]` (diffusers' default `(2, 1, 1)`) and the axes' widths.
fn cosmos_bases(keys: &Keys<'_>, dims: &[u64]) -> Result<[f64; 4]> {
    let key = "rope_scale";
    let scale = match keys.0.get(key).filter(|v| !v.is_null()) {
        None => vec![2.0, 1.0, 1.0],
        Some(v) => v
            .as_array()
            .and_then(|a| {
                a.iter()
                    .map(|x| x.as_f64().filter(|s| *s > 0.0 && s.is_finite()))
                    .collect()
            })
            .filter(|l: &Vec<f64>| l.len() == 3)
            .ok_or_else(|| Keys::bad(key, "three positive scales [t, h, w]", Some(v)))?,
    };
    let mut bases = [1e4; 4];
    for (a, (&s, &d)) in scale.iter().zip(dims).enumerate() {
        if d <= 2 {
            return Err(Keys::bad(
                "attention_head_dim",
                "axes wider than 2 lanes (Cosmos' NTK exponent d / (d - 2))",
                None,
            ));
        }
        bases[a] = 1e4 * s.powf(d as f64 / (d as f64 - 2.0));
    }
    Ok(bases)
}

/// OmniGen's LongRoPE (`rope_scaling` `{"type": "su", "short_factor", "long_factor"}`,
/// `max_position_embeddings` and `original_max_position_embeddings`), read as transformers
/// reads Phi-3's; the attention factor `sqrt(1 + ln(max / original) / ln(original))` is the
/// module's too.
fn omnigen_scaling(keys: &Keys<'_>) -> Result<Scaling> {
    let config = Value::Object(keys.0.clone());
    match Scaling::from_hf_config(&config)?.0 {
        s @ Scaling::LongRope(_) => Ok(s),
        _ => Err(Keys::bad(
            "rope_scaling",
            "OmniGen's su (LongRoPE) scaling: {\"type\": \"su\", \"short_factor\": [..], \"long_factor\": [..]}",
            keys.0.get("rope_scaling"),
        )),
    }
}

/// The head width of a rule (`sum`: the axes' widths).
fn head_dim(keys: &Keys<'_>, head: Head, sum: u64) -> Result<u64> {
    match head {
        Head::Key(key, default) => width(keys, key, default),
        Head::Sum => Ok(sum),
        Head::AxesSum(key, default) => Ok(widths(keys, key, default)?.iter().sum()),
        Head::AxesSumOr(first, key, default) => match keys.0.get(first) {
            Some(v) if !v.is_null() => Ok(widths(keys, first, &[])?.iter().sum()),
            _ => Ok(widths(keys, key, default)?.iter().sum()),
        },
        Head::Over(dim, d, heads, h) => {
            let (dim, n) = (keys.opt_u(dim)?.unwrap_or(d), width(keys, heads, h)?);
            match dim % n {
                0 if dim / n <= RopeSpec::MAX_HEAD_DIM => Ok(dim / n),
                _ => Err(Keys::bad(
                    heads,
                    "a divisor of the model width, heads of at most 2^20 lanes",
                    Some(&n.into()),
                )),
            }
        }
    }
}

/// The axes' widths in elements (empty for 1-D), the head and, for 1-D, the rotated width.
fn shape(keys: &Keys<'_>, rule: Rule) -> Result<(Vec<u64>, u64, Option<u64>)> {
    let head = |sum| head_dim(keys, rule.head, sum);
    Ok(match rule.form {
        Form::Axes(key, default) => {
            let dims = widths(keys, key, default)?;
            let d = head(dims.iter().sum())?;
            (dims, d, None)
        }
        Form::Wan | Form::Cosmos => {
            let d = head(0)?;
            let hw = 2 * (d / 6);
            (vec![d - 2 * hw, hw, hw], d, None)
        }
        Form::Quarter => {
            let d = head(0)?;
            if d % 16 != 0 {
                let need = "a multiple of 16 (axes of d / 4 and 3 d / 8 lanes, each even)";
                return Err(Keys::bad("attention_head_dim", need, Some(&d.into())));
            }
            (vec![d / 4, d / 8 * 3, d / 8 * 3], d, None)
        }
        Form::HalfEach => {
            let d = head(0)?;
            if d % 4 != 0 {
                let need = "a multiple of 4 (two axes of even widths)";
                return Err(Keys::bad("attention_head_dim", need, Some(&d.into())));
            }
            (vec![d / 2, d / 2], d, None)
        }
        Form::Shared(key, default) => (vec![2 * width(keys, key, default)?; 3], head(0)?, None),
        Form::Head => {
            let d = head(0)?;
            (Vec::new(), d, Some(d))
        }
        Form::Prefix(key, default) => (Vec::new(), head(0)?, Some(width(keys, key, default)?)),
        Form::HalfHead => {
            let d = head(0)?;
            (Vec::new(), d, Some(d / 2))
        }
        Form::Interleaved(..) => {
            let d = head(0)?;
            (Vec::new(), d, Some(d))
        }
    })
}

/// One module's rotation, from its rule.
fn read_rule(keys: &Keys<'_>, rule: Rule) -> Result<DiffusersRope> {
    let (dims, d, one_d) = shape(keys, rule)?;
    let rotated = one_d.unwrap_or_else(|| dims.iter().sum());
    // PRX rotates its whole head (diffusers raises where the axes do not cover it).
    if rule.module == "PRXEmbedND" && rotated != d {
        let need = "widths summing to hidden_size / num_heads";
        return Err(Keys::bad("axes_dim", need, keys.0.get("axes_dim")));
    }
    if rotated == 0 || rotated > d || rotated % 2 != 0 || dims.iter().any(|&w| w % 2 != 0) {
        return Err(Keys::bad(
            "attention_head_dim",
            "at least the rotated width, which must be even and positive (each axis's too)",
            Some(&d.into()),
        ));
    }
    let theta = match rule.theta {
        Theta::Fixed(t) => t,
        Theta::Key(key, default) => keys.opt_f(key)?.unwrap_or(default),
    };
    let mut spec = RopeSpec::new().base(theta).pair_layout(rule.layout);
    spec = match dims[..] {
        [] => spec,
        [h, w] => spec.axes_rope([0, h / 2, w / 2]),
        [t, h, w] => spec.axes_rope([t / 2, h / 2, w / 2]),
        [t, h, w, l] => spec.axes_rope4([t / 2, h / 2, w / 2, l / 2]),
        _ => return Err(Keys::bad("axes", "two to four widths", None)),
    };
    if rotated < d {
        spec = spec.rotary_dim(rotated);
    }
    if rule.module == "OmniGenSuScaledRotaryEmbedding" {
        spec = spec.scaling(omnigen_scaling(keys)?);
    }
    if let Form::Cosmos = rule.form {
        spec = spec.axis_bases(cosmos_bases(keys, &dims)?);
    }
    if let Form::Interleaved(key, default) = rule.form {
        let [h, w] = spatial(keys, key, default)?;
        // The temporal axis takes every pair the spatial ones leave.
        let t = (d / 2)
            .checked_sub(h + w)
            .ok_or_else(|| Keys::bad(key, "spatial sections within the head's pairs", None))?;
        spec = spec.mrope_order([t, h, w], MRopeOrder::Interleaved);
    }
    spec.validate(d)?;
    Ok(DiffusersRope {
        path: rule.path,
        module: rule.module,
        spec,
        head_dim: d,
    })
}

impl DiffusersRope {
    /// The rotary modules of a diffusers transformer, from its `config.json` (feature
    /// `hf-config`), in the order the class builds them
    /// (`tests/data/diffusers/ROPE.md` lists every class):
    ///
    /// - per-axis lists ([`RopeSpec::axes_rope`]): FLUX.1 and the classes that copy its
    ///   `FluxPosEmbed` (Chroma, LongCat-Image, Ovis-Image, Bria, Bria Fibo, Krea 2), Z-Image,
    ///   Bria Fibo 2, HunyuanVideo 1 and 1.5, Motif-Video, HunyuanImage, Wan 2.x (VACE,
    ///   Animate), Sana-Video, SkyReels-V2, ChronoEdit, AnyFlow, EasyAnimate, Qwen-Image,
    ///   Qwen-Image 2.1, NucleusMoE-Image, CogView4, GLM-Image, PRX, Lumina 2, Kandinsky 5,
    ///   6 and 6 SR (`audio_freqs_scaling` 1 only), MiniMax H3;
    /// - four axes ([`RopeSpec::axes_rope4`]): FLUX.2 and FLUX.3;
    /// - a theta per axis ([`RopeSpec::axis_bases`]): Cosmos;
    /// - interleaved M-RoPE: Ideogram 4 and Cosmos 3;
    /// - 1-D: OmniGen (LongRoPE: set [`RopeSpec::scaling_seq_len`] to its largest position
    ///   plus one, as its module chooses between its factor lists), Stable Audio 3, LongCat
    ///   Audio, MiniMax Music 3, Kandinsky's text and audio modules.
    ///
    /// The positions are the caller's, as each module's forward or pipeline makes them
    /// ([`Positions::Axes`](crate::Positions::Axes) or `FloatAxes` for axes, `[t.. | h.. |
    /// w..]`; 1-D positions otherwise): FLUX's ids, Wan's and HunyuanVideo's `(frame, row,
    /// column)` of the patch grid, CogView4's `row * rope_axes_dim[0] / rows`, Kandinsky's
    /// `(t, h, w) / scale_factor` and Qwen-Image's centered grids as f32. An empty list for a
    /// transformer with no rotary module ([`DIFFUSERS_WITHOUT_ROPE_MODULE`]); a class whose
    /// module the crate does not read ([`DIFFUSERS_ROPE_NOT_READ`], and a layered Qwen-Image
    /// config, `use_layer3d_rope`) is an error that names it and says why, as is an unknown
    /// `_class_name` or a bad key.
    pub fn from_diffusers_config(config: &Value) -> Result<Vec<Self>> {
        let (keys, class) = read_class(config)?;
        if let Some(e) = not_read(class) {
            return Err(e);
        }
        // Kandinsky 6's audio module scales its frequencies; only the default is read.
        let scaled = keys
            .opt_number("audio_freqs_scaling")?
            .is_some_and(|s| s != 1.0);
        if class == "Kandinsky6Transformer3DModel" && scaled {
            let v = keys.0.get("audio_freqs_scaling");
            let need = "1 (other audio frequency scalings are not read)";
            return Err(Keys::bad("audio_freqs_scaling", need, v));
        }
        if class == "QwenImageTransformer2DModel"
            && keys.opt_flag("use_layer3d_rope")? == Some(true)
        {
            return Err(Error::Frequency(FrequencyError::DiffusersRopeNotRead {
                class: class.to_string(),
                module: "QwenEmbedLayer3DRope",
                reason: "the layered model's positions (use_layer3d_rope): not checked yet",
            }));
        }
        let Some(rules) = rules(class) else {
            return match DIFFUSERS_WITHOUT_ROPE_MODULE.contains(&class) {
                true => Ok(Vec::new()),
                false => Err(keys.unknown_class()),
            };
        };
        rules.into_iter().map(|r| read_rule(&keys, r)).collect()
    }
}
