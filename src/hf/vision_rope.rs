//! The rotary embedding of a transformers vision tower, read from the model's `config.json`
//! (its vision sub-config: width, heads, `rope_parameters`), as transformers 5.24 builds it.
//! `tests/data/hf/vision_rope.py` records every family whose vision, video or audio encoder
//! rotates; `tests/data/hf/VISION.md` is the matrix of what is read.

use serde_json::Value;

use super::diffusers::Keys;
use super::diffusers_rope::RotaryModule;
use super::encoder_rope_rules::LINE_RULES;
use super::encoder_rule::{Form, Rule};
use super::timm_pe::{TIMM_RULES, head_and_temperature};
use super::vision_rope_refused::HF_VISION_ROPE_NOT_READ;
use super::vision_rope_rules::{RULES, VISION};
use crate::error::{Error, FrequencyError, Result};
use crate::spec::{AxisFrequencies, FrequencyUnit, MRope, MRopeOrder, PairLayout, RopeSpec};

/// The vision sub-config of `config` along `sub`: an object (missing: the class's defaults).
fn sub_config<'a>(
    config: &'a Value,
    sub: &[&str],
) -> Result<Option<&'a serde_json::Map<String, Value>>> {
    let mut at = config;
    for key in sub {
        match at.get(key) {
            None | Some(Value::Null) => return Ok(None),
            Some(v) => at = v,
        }
    }
    match at.as_object() {
        Some(o) => Ok(Some(o)),
        None => Err(Keys::bad(
            &sub.join("."),
            "an object (the vision tower's config)",
            Some(at),
        )),
    }
}

/// The module's theta and `partial_rotary_factor`: `rope_parameters`' own, legacy top-level
/// keys, or the rule's defaults; a `rope_type` other than the one the module takes (`axial`
/// for the towers, `default` for 1-D encoders) is refused, as transformers refuses it.
fn theta(keys: &Keys<'_>, rule: &Rule) -> Result<(f64, f64)> {
    let need = match rule.rope_type {
        Some("default") => "\"default\" (the 1-D encoders' only type)",
        _ => "\"axial\" (the only type the vision rotary modules take)",
    };
    let outer = (
        keys.opt_f("rope_theta")?.unwrap_or(rule.defaults.3),
        keys.opt_f("partial_rotary_factor")?.unwrap_or(rule.partial),
    );
    let Some(p) = keys.0.get("rope_parameters").filter(|v| !v.is_null()) else {
        return Ok(outer);
    };
    let Some(p) = p.as_object() else {
        return Err(Keys::bad("rope_parameters", "an object", Some(p)));
    };
    let inner = Keys(p);
    match (inner.opt_str("rope_type")?, rule.rope_type) {
        (Some(t), Some(kind)) if t != kind => {
            let found = p.get("rope_type");
            return Err(Keys::bad("rope_parameters.rope_type", need, found));
        }
        _ => {}
    }
    Ok((
        inner.opt_f("rope_theta")?.unwrap_or(outer.0),
        inner.opt_f("partial_rotary_factor")?.unwrap_or(outer.1),
    ))
}

/// The head width as the module computes it: `head_dim`, else width // heads (which must
/// divide, as the attention's reshape needs).
fn head_dim(keys: &Keys<'_>, rule: &Rule) -> Result<u64> {
    let (width, heads, head, _) = rule.defaults;
    if let Some(d) = keys.opt_u("head_dim")?.or(head) {
        return Ok(d);
    }
    let width = keys.opt_u(rule.width_key)?.unwrap_or(width);
    let heads = match (rule.heads_key, keys.opt_u("num_heads")?) {
        (Some(key), _) => keys.opt_u(key)?.unwrap_or(heads),
        (None, Some(h)) => h,
        (None, None) => keys.opt_u("num_attention_heads")?.unwrap_or(heads),
    };
    let divisor = match rule.divisor_key {
        Some(key) => keys.opt_u(key)?.unwrap_or(1),
        None => 1,
    };
    let heads = heads.saturating_mul(divisor);
    if width % heads != 0 {
        let need = "a multiple of the heads (num_heads, times a downsample rate)";
        return Err(Keys::bad(rule.width_key, need, keys.0.get(rule.width_key)));
    }
    Ok(width / heads)
}

/// The rotated width of a 1-D module over a head `d` wide: `int(d * partial)` (CLVP:
/// `max(projection_dim // (2 heads), 32)`), even and within the head.
fn line_width(keys: &Keys<'_>, rule: &Rule, d: u64, partial: f64) -> Result<u64> {
    let r = if rule.form == Form::Clvp {
        let heads = keys
            .opt_u("num_attention_heads")?
            .unwrap_or(rule.defaults.1);
        let projection = keys.opt_u("projection_dim")?.unwrap_or(768);
        (projection / heads.saturating_mul(2)).max(32)
    } else if partial > 0.0 && partial <= 1.0 {
        (d as f64 * partial) as u64
    } else {
        let need = "a factor in (0, 1]";
        return Err(Keys::bad(
            "partial_rotary_factor",
            need,
            Some(&partial.into()),
        ));
    };
    if r == 0 || r % 2 != 0 || r > d {
        let need =
            "a rotated width (head_dim * partial_rotary_factor) even, positive and within the head";
        return Err(Keys::bad("partial_rotary_factor", need, Some(&r.into())));
    }
    Ok(r)
}

/// The spec of `rule` over a head `d` wide, with the config's theta and partial factor.
fn spec(keys: &Keys<'_>, rule: &Rule, d: u64) -> Result<RopeSpec> {
    let (mut theta, partial) = theta(keys, rule)?;
    if rule.form == Form::TimmPe {
        theta = head_and_temperature(keys)?.1;
    }
    let base = RopeSpec::new().base(theta);
    let ordered = |order, layout| {
        let mut s = base.clone().pair_layout(layout);
        s.mrope = Some(MRope {
            section: [0, d / 4, d / 4],
            fourth: 0,
            order,
            frequencies: AxisFrequencies::PerAxis,
        });
        s
    };
    let two_axes = !matches!(
        rule.form,
        Form::Thirds | Form::TiledThirds | Form::Line(_) | Form::Clvp
    );
    if two_axes && !d.is_multiple_of(4) {
        let need = "a head width divisible by 4 (two axes of d / 4 frequencies)";
        return Err(Keys::bad("head_dim", need, Some(&d.into())));
    }
    let spec = match rule.form {
        Form::Halves => base.axes_rope([0, d / 4, d / 4]),
        Form::Periods => base
            .axes_rope([0, d / 4, d / 4])
            .frequency_unit(FrequencyUnit::Revolutions),
        Form::Dealt => base.axes_dealt([0, d / 4, d / 4]),
        Form::Hidden => hidden_spec(keys, rule, d, partial, base)?,
        Form::WidthFirstAlternating => ordered(MRopeOrder::WhThenT, PairLayout::HalfSplit),
        Form::WidthFirstBlocks => ordered(MRopeOrder::WhtChunks, PairLayout::HalfSplit),
        Form::AxisBlocks => ordered(MRopeOrder::WhtChunks, PairLayout::HalfSplit).pair_blocks(2),
        Form::WidthFirstInterleaved | Form::TimmPe => {
            ordered(MRopeOrder::WhtChunks, PairLayout::Interleaved)
        }
        Form::Thirds => {
            let f = d / 3 / 2;
            if f == 0 {
                let need = "a head width of at least 6";
                return Err(Keys::bad("head_dim", need, Some(&d.into())));
            }
            base.axes_rope([f, f, f]).rotary_dim(6 * f)
        }
        Form::TiledThirds => {
            let f = d / 3 / 2;
            if f == 0 {
                let need = "a head width of at least 6";
                return Err(Keys::bad("head_dim", need, Some(&d.into())));
            }
            base.base(10_000.0)
                .axes_rope([f, f, f])
                .pair_layout(PairLayout::Interleaved)
                .pair_blocks(3)
                .table_layout(PairLayout::HalfSplit)
                .rotary_dim(6 * f)
        }
        Form::Line(layout) => base
            .pair_layout(layout)
            .rotary_dim(line_width(keys, rule, d, partial)?),
        Form::Clvp => base
            .base(10_000.0)
            .rotary_dim(line_width(keys, rule, d, partial)?),
    };
    spec.validate(d)?;
    Ok(spec)
}

/// EfficientLoFTR's rotation of the whole width `d`: `int(head_dim * partial) / 2`
/// frequencies, which must be `d / 4` (the module's broadcast fails otherwise), row and
/// column alternating over interleaved pairs.
fn hidden_spec(
    keys: &Keys<'_>,
    rule: &Rule,
    d: u64,
    partial: f64,
    base: RopeSpec,
) -> Result<RopeSpec> {
    let per_head = head_dim(keys, rule)?;
    let r = (per_head as f64 * partial) as u64;
    if !d.is_multiple_of(4) || r / 2 != d / 4 || !partial.is_finite() {
        let need = "int(head_dim * partial_rotary_factor) / 2 frequencies, a quarter of \
                    hidden_size (the module's row and column lists each fill a quarter)";
        return Err(Keys::bad(
            "partial_rotary_factor",
            need,
            Some(&partial.into()),
        ));
    }
    let mut spec = base.pair_layout(PairLayout::Interleaved);
    spec.mrope = Some(MRope {
        section: [0, d / 4, d / 4],
        fourth: 0,
        order: MRopeOrder::HwThenT,
        frequencies: AxisFrequencies::PerAxis,
    });
    Ok(spec)
}

/// The width a module rotates: the head's, or EfficientLoFTR's whole `hidden_size`.
fn module_width(keys: &Keys<'_>, rule: &Rule) -> Result<u64> {
    if rule.form == Form::TimmPe {
        return Ok(head_and_temperature(keys)?.0);
    }
    if rule.form != Form::Hidden {
        return head_dim(keys, rule);
    }
    let d = keys.opt_u(rule.width_key)?.unwrap_or(rule.defaults.0);
    match d {
        2..=RopeSpec::MAX_HEAD_DIM => Ok(d),
        _ => Err(Keys::bad(
            rule.width_key,
            "a width of 2 to 2^20",
            Some(&d.into()),
        )),
    }
}

impl RotaryModule {
    /// The rotary modules of a transformers model's non-text encoders (vision towers; audio,
    /// codec, protein and time-series encoders), from the model's `config.json` (feature
    /// `hf-config`), in the order transformers 5.24 builds them
    /// (`tests/data/hf/VISION.md` lists every model type whose encoders rotate):
    ///
    /// - height then width, each `d / 4` pairs of `theta^(-2k/(d/2))`, half-split
    ///   ([`RopeSpec::axes_rope`] `[0, d/4, d/4]`): Qwen2-VL, Qwen2.5-VL, Qwen2.5-Omni,
    ///   Qwen3-VL (MoE), Qwen3-Omni, Qwen3.5 (MoE), GLM-4V (MoE), GLM-OCR, ERNIE 4.5 VL,
    ///   PaddleOCR-VL, and the other towers that copy Qwen2-VL's;
    /// - Pixtral (and the models that take its tower, Mistral 3, LightOnOCR): one list dealt
    ///   to height and width ([`RopeSpec::axes_dealt`]);
    /// - width first: Kimi K2.5 ([`MRopeOrder::WhThenT`]), Step 3.7, Muse and Inkling 2
    ///   ([`MRopeOrder::WhtChunks`], Inkling 2 over interleaved pairs);
    /// - DINOv3's ViT (also CHMv2's backbone) and Sapiens2: height then width as Qwen2-VL's,
    ///   in revolutions per unit coordinate ([`FrequencyUnit::Revolutions`], theta 100), over
    ///   the patch centres' coordinates in `[-1, 1]` as f32 positions
    ///   ([`Positions::FloatAxes`](crate::Positions::FloatAxes)); the prefix tokens (CLS,
    ///   registers) at `(0, 0)`, which leaves them unrotated exactly, as the model leaves them;
    /// - Gemma 4's tower: width then height, each axis half-split within its own half of the
    ///   head ([`RopeSpec::pair_blocks`] 2), positions `(0, row, column)`;
    /// - EfficientLoFTR's coarse matcher: row and column alternating over interleaved pairs
    ///   ([`MRopeOrder::HwThenT`], per-axis lists), over the whole `hidden_size` before the
    ///   head split (its `head_dim`), positions `(0, row + 1, column + 1)` of the aggregated
    ///   coarse map;
    /// - MiniMax M3 VL: three axes `(t, h, w)`, `(d / 3) / 2` pairs each, the rest of the head
    ///   unrotated;
    /// - V-JEPA 2's encoder and predictor: three axes `(t, h, w)` of `(d / 3) / 2` frequencies,
    ///   each a block of interleaved pairs whose cos and sin the model tiles `[f | f]`
    ///   ([`RopeSpec::table_layout`] half-split, [`RopeSpec::pair_blocks`] 3), the rest of the
    ///   head unrotated, positions `(frame, row, column)` of each token;
    /// - timm's PE ViT, the frame encoder of PE Video and PE Audio-Video (`RotaryEmbeddingCat`,
    ///   the head width of the architecture its `TimmWrapper` config names): as Inkling 2's,
    ///   positions `(0, row + 1, column + 1)` (`rope_grid_offset` 1; 0 for the gigantic ones,
    ///   which have no class token), the class token at `(0, 0)`, unrotated as the model leaves
    ///   it;
    /// - 1-D over a frame's (residue's, patch's) index, transformers' default parameters
    ///   (theta, `partial_rotary_factor`): GLM-ASR, LASR, Voxtral Realtime, Nemotron's ASR,
    ///   diarization and word-timestamp encoders, Moonshine's encoder (interleaved), Mimi
    ///   (encoder and decoder, also inside CSM), Pocket TTS, ESMC, Evolla, TimesFM 2.5, CLVP's
    ///   speech encoder (which rotates V too), PE Audio (interleaved), PI0's action expert and
    ///   dots3's audio tower.
    ///
    /// The positions are the caller's: for a tower `[3, batch, seq]`
    /// ([`Positions::Axes`](crate::Positions::Axes)): plane 0 the frame (MiniMax M3 VL; zeros
    /// elsewhere), plane 1 the patch row, plane 2 its column, as the model makes them (Qwen's
    /// 2 x 2 merge blocks, Inkling 2's and Muse's `+ 1` with a class token at 0); for a 1-D
    /// encoder one a token (TimesFM's negative for its padding: [`Positions::Float`](crate::Positions::Float)).
    /// A model type whose encoder the crate does not read ([`HF_VISION_ROPE_NOT_READ`]) is an
    /// error that says why; so is a `model_type` with no rotating encoder known to the crate,
    /// and a bad key.
    pub fn from_hf_vision_config(config: &Value) -> Result<Vec<Self>> {
        let model_type = config.get("model_type").and_then(Value::as_str);
        let Some(model_type) = model_type else {
            let need = "the transformers model type (a string)";
            return Err(Keys::bad("model_type", need, config.get("model_type")));
        };
        if let Some((_, module, reason)) =
            HF_VISION_ROPE_NOT_READ.iter().find(|r| r.0 == model_type)
        {
            return Err(Error::Frequency(FrequencyError::FamilyNotRead {
                model_type: model_type.to_string(),
                reason: format!("its encoder rotates with {module}: {reason}"),
            }));
        }
        let all = || RULES.iter().chain(LINE_RULES).chain(TIMM_RULES);
        // Every module of the model type (a tower and an audio encoder, Mimi's encoder and
        // decoder), in the order the model builds them.
        let mut rows: Vec<Rule> = all()
            .filter(|r| r.model_type == model_type)
            .copied()
            .collect();
        // Pixtral's tower also serves other models (LLaVA's), by its own model type.
        let pixtral = config.pointer("/vision_config/model_type") == Some(&"pixtral".into());
        if let Some(rule) = RULES.iter().find(|r| r.model_type == "pixtral")
            && rows.is_empty()
            && pixtral
        {
            rows.push(Rule {
                sub: VISION,
                ..*rule
            });
        }
        if rows.is_empty() {
            let mut families: Vec<&str> = all().map(|r| r.model_type).collect();
            families.dedup();
            return Err(Error::Frequency(FrequencyError::UnsupportedModelType {
                model_type: model_type.to_string(),
                families: families.join(", "),
            }));
        }
        rows.iter().map(|rule| read_row(config, rule)).collect()
    }
}

/// One module of a model type, from the config its rule names.
fn read_row(config: &Value, rule: &Rule) -> Result<RotaryModule> {
    let empty = serde_json::Map::new();
    let keys = Keys(sub_config(config, rule.sub)?.unwrap_or(&empty));
    let d = module_width(&keys, rule)?;
    Ok(RotaryModule {
        path: rule.path,
        module: rule.module,
        spec: spec(&keys, rule, d)?,
        head_dim: d,
        position_axis: rule.position_axis,
    })
}
