//! The rotary embedding a diffusers transformer applies to its queries and keys, read from its
//! `config.json` (`_class_name` and the keys its constructor passes to the rotary module), as
//! diffusers 0.42 builds it.

use serde_json::Value;

use super::diffusers::{Keys, read_class};
use super::diffusers_rope_rules::{Form, Head, Rule, Theta, rules};
use crate::error::{Error, FrequencyError, Result};
use crate::frequencies::Scaling;
use crate::spec::{MRopeOrder, RopeSpec};

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
/// module and what it does that [`RopeSpec`] does not express: none of diffusers 0.42.1's
/// (Mochi's frequencies are its checkpoint's: [`RotaryModule::from_diffusers_checkpoint`]).
pub const DIFFUSERS_ROPE_NOT_READ: [(&str, &str, &str); 0] = [];

/// What a module's positions index (see [`RotaryModule::position_axis`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PositionAxis {
    /// Each token turns by its position (every module but those below).
    Token,
    /// Each head turns by its index, at every token (NeuCodec's and Xcodec2's acoustic
    /// decoders: `position_ids = arange(heads)`): rotate the view
    /// [`Layout::heads_as_tokens`](crate::Layout::heads_as_tokens) at
    /// [`Positions::Start`](crate::Positions::Start) 0.
    Head,
}

/// A rotary module of a diffusers transformer ([`RotaryModule::from_diffusers_config`]) or
/// of a transformers vision tower ([`RotaryModule::from_hf_vision_config`]): what it
/// computes for the positions it is given, and how the attention applies it.
#[derive(Clone, Debug, PartialEq)]
pub struct RotaryModule {
    /// The module's attribute in the model (`pos_embed`, `rope`, `rotary_emb`,
    /// `visual.rotary_pos_emb`, ...); `{i}` stands for each layer's number where every layer
    /// holds one (SAM 3's ViT, `vision_encoder.backbone.layers.{i}.rotary_emb`);
    /// `rope[camera]` for SANA-WM's camera branch, which re-slices its `rope`'s table.
    pub path: &'static str,
    /// The library's class of the module (`FluxPosEmbed`, `WanRotaryPosEmbed`,
    /// `Qwen2VLVisionRotaryEmbedding`, ...).
    pub module: &'static str,
    /// The rotation: [`RopeSpec::axes_rope`] with each axis's width (pairs, `[t, h, w]`;
    /// two-axis models leave `t` at 0 and read rows 1 and 2 of the positions), or a 1-D
    /// RoPE (audio and text modules); the module's theta, its pair layout, and the rotated
    /// width where it is less than the head.
    pub spec: RopeSpec,
    /// The attention head's width (`attention_head_dim`, or the axes' sum where the config
    /// names none); LTX's modules rotate the whole inner dimension before the heads split,
    /// and give that.
    pub head_dim: u64,
    /// What the positions index: tokens, or (NeuCodec, Xcodec2) heads.
    pub position_axis: PositionAxis,
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
        Head::Times(heads, h, width_key, w) => {
            let d = width(keys, heads, h)?.saturating_mul(width(keys, width_key, w)?);
            match d <= RopeSpec::MAX_HEAD_DIM {
                true => Ok(d),
                false => Err(Keys::bad(
                    heads,
                    "heads times their width of at most 2^20 lanes",
                    Some(&d.into()),
                )),
            }
        }
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
        Form::Axes(key, default) | Form::WholeAxes(key, default) => {
            let dims = widths(keys, key, default)?;
            let d = head(dims.iter().sum())?;
            (dims, d, None)
        }
        Form::IdAxes(key, default) => {
            let dims = widths(keys, key, default)?;
            if dims.len() != 3 {
                let need = "three widths, one per id axis (t, h, w): diffusers' module fails \
                            on fewer (HiDream-I1's config.json has [64, 32, 32])";
                return Err(Keys::bad(key, need, keys.0.get(key)));
            }
            let d = head(dims.iter().sum())?;
            (dims, d, None)
        }
        Form::Wan | Form::Cosmos | Form::WanCamera => {
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
        Form::Head | Form::LongRope => {
            let d = head(0)?;
            (Vec::new(), d, Some(d))
        }
        Form::Prefix(key, default) => (Vec::new(), head(0)?, Some(width(keys, key, default)?)),
        Form::HalfHead => {
            let d = head(0)?;
            (Vec::new(), d, Some(d / 2))
        }
        // LTX's: read by read_ltx, the whole inner dimension.
        Form::Interleaved(..) | Form::Ltx(..) => {
            let d = head(0)?;
            (Vec::new(), d, Some(d))
        }
    })
}

/// LTX's rotation over `axes` axes of the inner dimension: `n = d / (2 axes)` rising
/// frequencies per axis, interleaved (the one axis last, as two-axis models leave `t`), after
/// `d % (2 axes)` leading lanes.
fn read_ltx(keys: &Keys<'_>, rule: Rule, axes: u64) -> Result<RotaryModule> {
    let d = head_dim(keys, rule.head, 0)?;
    let n = d / (2 * axes);
    if n == 0 {
        let need = "an inner dimension of at least two lanes an axis";
        return Err(Keys::bad("attention_head_dim", need, Some(&d.into())));
    }
    let theta = theta(keys, rule)?;
    let spec = match axes {
        3 => RopeSpec::new().axes_rising([n, n, n], MRopeOrder::Interleaved),
        _ => RopeSpec::new().axes_rising([0, 0, n], MRopeOrder::Chunks),
    }
    .base(theta)
    .pair_layout(rule.layout)
    .leading_lanes(d % (2 * axes))
    .rotary_dim(2 * axes * n);
    module(rule, spec, d)
}

/// Whether SANA-WM builds its `rope` (`use_pe`, true by default), whose `pos_embed_type`
/// must be `wan_rope` (diffusers raises otherwise).
fn sana_wm_rope(keys: &Keys<'_>) -> Result<bool> {
    if keys.opt_flag("use_pe")? == Some(false) {
        return Ok(false);
    }
    match keys.opt_str("pos_embed_type")? {
        None | Some("wan_rope") => Ok(true),
        Some(_) => {
            let need = "\"wan_rope\" (the one SANA-WM builds)";
            Err(Keys::bad(
                "pos_embed_type",
                need,
                keys.0.get("pos_embed_type"),
            ))
        }
    }
}

/// LTX-2's `rope_type`: `interleaved` (its default) or `split`.
fn ltx2_rope_type(keys: &Keys<'_>) -> Result<()> {
    match keys.opt_str("rope_type")? {
        None | Some("interleaved" | "split") => Ok(()),
        Some(_) => Err(Keys::bad(
            "rope_type",
            "interleaved or split",
            keys.0.get("rope_type"),
        )),
    }
}

/// LTX-2's `split` rotation of `heads` heads of the inner dimension `d`: one list of `d / 2`
/// pairs, `d / 2 - axes n` of them in front unrotated, then `n` rising frequencies with the
/// axes interleaved, cut into the heads' slices, half-split within each head: a learned
/// table ([`RopeSpec::learned`]) of each head's pairs, the entries of other axes zero.
fn read_ltx_split(keys: &Keys<'_>, rule: Rule, axes: u64, heads: u64) -> Result<RotaryModule> {
    let d = head_dim(keys, rule.head, 0)?;
    let n = d / (2 * axes);
    if heads == 0 || n == 0 || !d.is_multiple_of(2 * heads) {
        let need = "an inner dimension of two lanes an axis, split evenly over the heads";
        return Err(Keys::bad("num_attention_heads", need, Some(&heads.into())));
    }
    let theta = theta(keys, rule)?;
    let (pairs, per_head) = (d / 2, d / 2 / heads);
    let pad = pairs - axes * n;
    // 1-D modules read their one plane as 1-D positions.
    let mut values = vec![0.0; (axes * pairs) as usize];
    for g in pad..pairs {
        let (k, a) = ((g - pad) / axes, (g - pad) % axes);
        let e = if n > 1 {
            k as f64 / (n - 1) as f64
        } else {
            0.0
        };
        let (h, p) = (g / per_head, g % per_head);
        values[((a * heads + h) * per_head + p) as usize] =
            std::f64::consts::FRAC_PI_2 * theta.powf(e);
    }
    let spec = RopeSpec::new()
        .base(theta)
        .learned(crate::LearnedFrequencies::new(axes, heads, values));
    module(rule, spec, d / heads)
}

/// A rule's theta: fixed, or a key of the config with its default.
fn theta(keys: &Keys<'_>, rule: Rule) -> Result<f64> {
    Ok(match rule.theta {
        Theta::Fixed(t) => t,
        Theta::Key(key, default) => keys.opt_f(key)?.unwrap_or(default),
    })
}

/// The module a rule names, rotating `spec` over heads `d` wide (checked), each token by
/// its position.
fn module(rule: Rule, spec: RopeSpec, d: u64) -> Result<RotaryModule> {
    spec.validate(d)?;
    Ok(RotaryModule {
        path: rule.path,
        module: rule.module,
        spec,
        head_dim: d,
        position_axis: PositionAxis::Token,
    })
}

/// SANA-WM's camera branch (`_slice_rope_for_cam`): the second half of each head (the first
/// `d / 2` lanes, leading, are its ray matrices') turned by the first `r / 2 - 2 (r / 6)`,
/// `r / 6` and `r / 6` frequencies (`r = d / 2`) of the main table's t, h and w lists, whose
/// widths `w_a` stay the whole head's (`theta^(-2k / w_a)`): per-axis lists of those lengths
/// `n_a` under the bases `theta^(2 n_a / w_a)`. Its output is turned back by the inverse.
fn read_wan_camera(keys: &Keys<'_>, rule: Rule, dims: &[u64], d: u64) -> Result<RotaryModule> {
    if !d.is_multiple_of(4) {
        let need = "a multiple of 4 (the camera branch turns pairs of the head's second half)";
        return Err(Keys::bad("linear_head_dim", need, Some(&d.into())));
    }
    let r = d / 2;
    let n = [r / 2 - 2 * (r / 6), r / 6, r / 6];
    let theta = theta(keys, rule)?;
    let base = |a: usize| match n[a] {
        0 => theta,
        k => theta.powf(2.0 * k as f64 / dims[a] as f64),
    };
    let spec = RopeSpec::new()
        .base(theta)
        .pair_layout(rule.layout)
        .axes_rope(n)
        .axis_bases([base(0), base(1), base(2), theta])
        .leading_lanes(r);
    module(rule, spec, d)
}

/// One module's rotation, from its rule.
fn read_rule(keys: &Keys<'_>, rule: Rule) -> Result<RotaryModule> {
    if let Form::Ltx(axes, heads, default) = rule.form {
        return match keys.opt_str("rope_type")? {
            Some("split") => read_ltx_split(keys, rule, axes, width(keys, heads, default)?),
            _ => read_ltx(keys, rule, axes),
        };
    }
    let (dims, d, one_d) = shape(keys, rule)?;
    if let Form::WanCamera = rule.form {
        return read_wan_camera(keys, rule, &dims, d);
    }
    let rotated = one_d.unwrap_or_else(|| dims.iter().sum());
    if let Form::WholeAxes(key, _) | Form::IdAxes(key, _) = rule.form
        && rotated != d
    {
        let need = "widths summing to the head (hidden_size / num_heads)";
        return Err(Keys::bad(key, need, keys.0.get(key)));
    }
    if rotated == 0 || rotated > d || rotated % 2 != 0 || dims.iter().any(|&w| w % 2 != 0) {
        return Err(Keys::bad(
            "attention_head_dim",
            "at least the rotated width, which must be even and positive (each axis's too)",
            Some(&d.into()),
        ));
    }
    let theta = theta(keys, rule)?;
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
    if let Some(table) = rule.table {
        spec = spec.table_layout(table);
    }
    if rule.pool > 1 {
        spec = spec.pooled(rule.pool);
    }
    if let Form::LongRope = rule.form {
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
    module(rule, spec, d)
}

impl RotaryModule {
    /// The rotary modules of a diffusers transformer, from its `config.json` (feature
    /// `hf-config`), in the order the class builds them
    /// (`tests/data/diffusers/ROPE.md` lists every class):
    ///
    /// - per-axis lists ([`RopeSpec::axes_rope`]): FLUX.1 and the classes that copy its
    ///   `FluxPosEmbed` (Chroma, LongCat-Image, Ovis-Image, Bria, Bria Fibo, Krea 2), Z-Image,
    ///   Bria Fibo 2, HunyuanVideo 1 and 1.5, Motif-Video, HunyuanImage, Wan 2.x (VACE,
    ///   Animate), Sana-Video, SkyReels-V2, ChronoEdit, AnyFlow, EasyAnimate, Qwen-Image,
    ///   Qwen-Image 2.1, NucleusMoE-Image, CogView4, GLM-Image, PRX, Lumina 2, Kandinsky 5,
    ///   6 and 6 SR (`audio_freqs_scaling` 1 only), MiniMax H3, HiDream (three widths only:
    ///   its class default of two, on which diffusers fails, is an error);
    /// - four axes ([`RopeSpec::axes_rope4`]): FLUX.2 and FLUX.3;
    /// - a theta per axis ([`RopeSpec::axis_bases`]): Cosmos;
    /// - interleaved M-RoPE: Ideogram 4 and Cosmos 3;
    /// - rising lists after leading lanes ([`RopeSpec::axes_rising`],
    ///   [`RopeSpec::leading_lanes`]): LTX-Video, LTX-2 and SANA-WM's LTX-2 refiner (`rope_type`
    ///   `interleaved`; with `split`, one list across the heads, each head half-split over its
    ///   slice, a learned table per head, [`RopeSpec::learned`], over `head_dim` the inner
    ///   dimension over the heads). These rotate Q and K before the heads
    ///   split: `head_dim` is the inner dimension (heads times their width, or
    ///   `audio_cross_attention_dim`), a view of one head over `[batch, seq, inner]`, and the
    ///   positions are each coordinate's fraction `g` of the module's base size as
    ///   `2 g - 1`, f32 (`FloatAxes`; the one axis of the audio and cross-attention modules
    ///   in the last plane);
    /// - 1-D: OmniGen (LongRoPE: set [`RopeSpec::scaling_seq_len`] to its largest position
    ///   plus one, as its module chooses between its factor lists), Stable Audio 3, LongCat
    ///   Audio, MiniMax Music 3, Kandinsky's text and audio modules;
    /// - pooled positions ([`RopeSpec::pooled`], 4 sets a token): Helios and FramePack
    ///   (HunyuanVideo's), whose history tokens take cos and sin averaged over 2x2x2 and
    ///   4x4x4 blocks of the grid, the edge blocks' last frame, row and column replicated:
    ///   a token of a `k`-block gives set `j` the block's cell at offset `j mod k` on every
    ///   axis (clamped at the edge; a full-resolution token repeats its one position);
    /// - a table laid out for interleaved pairs under `rotate_half`
    ///   ([`RopeSpec::table_layout`]): ERNIE-Image;
    /// - SANA-WM: its `rope` as Wan's over `linear_head_dim`, and its camera branch
    ///   (`rope[camera]`, `_slice_rope_for_cam`): the second half of each head, after the
    ///   first half's `leading_lanes` (the branch's ray matrices, not a rotation), turned by
    ///   the first frequencies of the main lists (per-axis lists under
    ///   [`RopeSpec::axis_bases`] `theta^(2 n / w)`); the branch turns its output back with
    ///   the inverse;
    /// - AnyFlow-FAR's causal module as AnyFlow's, its compressed tokens (a normalized
    ///   average of the complex table over `k = compressed_patch_size / patch_size`
    ///   positions) at f32 positions `k b + (k - 1) / 2`, the blocks' centres, where that
    ///   is the same rotation (`k <= 6` on each axis, checked).
    ///
    /// The positions are the caller's, as each module's forward or pipeline makes them
    /// ([`Positions::Axes`](crate::Positions::Axes) or `FloatAxes` for axes, `[t.. | h.. |
    /// w..]`; 1-D positions otherwise): FLUX's ids, Wan's and HunyuanVideo's `(frame, row,
    /// column)` of the patch grid, CogView4's `row * rope_axes_dim[0] / rows`, Kandinsky's
    /// `(t, h, w) / scale_factor` and Qwen-Image's centered grids as f32. An empty list for a
    /// transformer with no rotary module ([`DIFFUSERS_WITHOUT_ROPE_MODULE`]); a class whose
    /// module the crate does not read ([`DIFFUSERS_ROPE_NOT_READ`], Mochi's learned frequencies
    /// without its checkpoint: [`RotaryModule::from_diffusers_checkpoint`], and a layered Qwen-Image
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
        if class == "MochiTransformer3DModel" {
            return Err(Error::Frequency(FrequencyError::DiffusersRopeNotRead {
                class: class.to_string(),
                module: "MochiRoPE",
                reason: "its frequencies are the checkpoint's learned pos_frequencies [3, heads, \
                         head_dim / 2], not in config.json: read it with \
                         RotaryModule::from_diffusers_checkpoint and model.safetensors",
            }));
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
        if class == "AnyFlowFARTransformer3DModel" {
            far_downscale(&keys)?;
        }
        if class == "SanaWMTransformer3DModel" && !sana_wm_rope(&keys)? {
            return Ok(Vec::new());
        }
        if rules.iter().any(|r| matches!(r.form, Form::Ltx(1, ..))) {
            ltx2_rope_type(&keys)?;
        }
        rules.into_iter().map(|r| read_rule(&keys, r)).collect()
    }
}

/// AnyFlow-FAR's compressed tokens take the normalized mean of `e^(i f p)` over `k`
/// positions a block on each axis (`avg_pool1d` of its complex table, downscale `k =
/// compressed_patch_size / patch_size`): the angle at the block's centre `k b + (k - 1) /
/// 2` wherever `sin(k f / 2) / sin(f / 2) > 0` for its fastest frequency `f = 1`, that is
/// `k <= 6`; a larger or zero downscale is refused.
fn far_downscale(keys: &Keys<'_>) -> Result<[u64; 3]> {
    let need =
        "three positive integers, compressed_patch_size / patch_size from 1 to 6 on each axis";
    let three = |key: &str, default: [u64; 3]| -> Result<[u64; 3]> {
        let Some(v) = keys.0.get(key).filter(|v| !v.is_null()) else {
            return Ok(default);
        };
        let list: Option<Vec<u64>> = v
            .as_array()
            .and_then(|a| a.iter().map(|x| x.as_u64().filter(|&n| n > 0)).collect());
        match list.as_deref() {
            Some(&[a, b, c]) => Ok([a, b, c]),
            _ => Err(Keys::bad(key, need, Some(v))),
        }
    };
    let (p, c) = (
        three("patch_size", [1, 2, 2])?,
        three("compressed_patch_size", [1, 4, 4])?,
    );
    let k = [c[0] / p[0], c[1] / p[1], c[2] / p[2]];
    if k.iter().any(|&k| !(1..=6).contains(&k)) {
        return Err(Keys::bad(
            "compressed_patch_size",
            need,
            keys.0.get("compressed_patch_size"),
        ));
    }
    Ok(k)
}
