//! The frame encoder of PE Video and PE Audio-Video: timm's PE ViT inside a `TimmWrapper`
//! config, which names the timm architecture (`vit_pe_core_large_patch14_336` by default) but
//! holds none of its rotary parameters. Its `RotaryEmbeddingCat` (timm 1.0.31) is the same
//! for every PE architecture: axial 2-D over the patch grid, `'xy'` indexing (the column
//! first), interleaved pairs, `temperature^(-4j/d)` with temperature 10 000; the head width
//! is the architecture's `embed_dim / num_heads`, which this table holds
//! (`tests/data/hf/vision_rope.py` builds the default one with timm and checks it).

use super::diffusers::Keys;
use super::encoder_rule::{Form, Rule, rule};
use crate::error::Result;

/// timm's PE ViT architectures: name, `embed_dim`, `num_heads`.
const ARCHITECTURES: [(&str, u64, u64); 12] = [
    ("vit_pe_core_tiny_patch16_384", 192, 3),
    ("vit_pe_core_small_patch16_384", 384, 6),
    ("vit_pe_core_base_patch16_224", 768, 12),
    ("vit_pe_core_large_patch14_336", 1024, 16),
    ("vit_pe_core_gigantic_patch14_448", 1536, 16),
    ("vit_pe_lang_large_patch14_448", 1024, 16),
    ("vit_pe_lang_gigantic_patch14_448", 1536, 16),
    ("vit_pe_spatial_tiny_patch16_512", 192, 3),
    ("vit_pe_spatial_small_patch16_512", 384, 6),
    ("vit_pe_spatial_base_patch16_512", 768, 12),
    ("vit_pe_spatial_large_patch14_448", 1024, 16),
    ("vit_pe_spatial_gigantic_patch14_448", 1536, 16),
];

/// The architecture `TimmWrapperConfig` holds by default in PE Video's configs.
const DEFAULT: &str = "vit_pe_core_large_patch14_336";

/// `model_args` keys that change the grid or training only, not the rotation (the grid's
/// positions are the caller's).
const GRID_ONLY: [&str; 9] = [
    "img_size",
    "dynamic_img_size",
    "drop_rate",
    "drop_path_rate",
    "attn_drop_rate",
    "proj_drop_rate",
    "global_pool",
    "features_only",
    "out_indices",
];

const fn pe_rope(
    model_type: &'static str,
    sub: &'static [&'static str],
    path: &'static str,
) -> Rule {
    Rule {
        rope_type: None,
        ..rule(
            model_type,
            sub,
            path,
            "RotaryEmbeddingCat",
            Form::TimmPe,
            "embed_dim",
            (1024, 16, None, 1e4),
        )
    }
}

const AV: &[&str] = &["audio_video_config", "video_config", "vision_config"];

/// The PE ViTs read, by top-level `model_type`.
pub(super) const TIMM_RULES: &[Rule] = &[
    pe_rope(
        "pe_video",
        &["video_config", "vision_config"],
        "video_encoder.embedder.vision_model.timm_model.rope",
    ),
    pe_rope(
        "pe_video_encoder",
        &["vision_config"],
        "embedder.vision_model.timm_model.rope",
    ),
    pe_rope(
        "pe_audio_video",
        AV,
        "video_model.video_encoder.embedder.vision_model.timm_model.rope",
    ),
    pe_rope(
        "pe_audio_video",
        AV,
        "audio_video_encoder.embedder.video_encoder.embedder.vision_model.timm_model.rope",
    ),
    pe_rope(
        "pe_audio_video_encoder",
        &["video_config", "vision_config"],
        "embedder.video_encoder.embedder.vision_model.timm_model.rope",
    ),
];

/// The head width and temperature of the PE ViT a `TimmWrapper` config names: the
/// architecture's, with `model_args`' `embed_dim`, `num_heads` and `rope_temperature` over
/// them; a key of `model_args` that would change the rotation otherwise, an architecture that
/// is not a PE ViT, or a width the heads do not divide is a typed error.
pub(super) fn head_and_temperature(keys: &Keys<'_>) -> Result<(u64, f64)> {
    let name = keys.opt_str("architecture")?.unwrap_or(DEFAULT);
    let Some(&(_, width, heads)) = ARCHITECTURES.iter().find(|a| a.0 == name) else {
        let need = "a timm PE ViT (vit_pe_core_*, vit_pe_lang_*, vit_pe_spatial_*, timm 1.0.31)";
        return Err(Keys::bad("architecture", need, keys.0.get("architecture")));
    };
    let empty = serde_json::Map::new();
    let args = match keys.0.get("model_args") {
        None | Some(serde_json::Value::Null) => &empty,
        Some(serde_json::Value::Object(o)) => o,
        Some(v) => {
            return Err(Keys::bad(
                "model_args",
                "an object (timm's model arguments)",
                Some(v),
            ));
        }
    };
    let args = Keys(args);
    const READ: [&str; 3] = ["embed_dim", "num_heads", "rope_temperature"];
    if let Some((k, v)) = args
        .0
        .iter()
        .find(|(k, _)| !READ.contains(&k.as_str()) && !GRID_ONLY.contains(&k.as_str()))
    {
        let need = "no model_args key that changes the rotation beyond embed_dim, num_heads and \
            rope_temperature (the crate reads those; the grid's keys change only the positions)";
        return Err(Keys::bad(&format!("model_args.{k}"), need, Some(v)));
    }
    let width = args.opt_u("embed_dim")?.unwrap_or(width);
    let heads = args.opt_u("num_heads")?.unwrap_or(heads);
    if width % heads != 0 {
        let need = "a multiple of num_heads";
        return Err(Keys::bad("model_args.embed_dim", need, Some(&width.into())));
    }
    let temperature = args.opt_f("rope_temperature")?.unwrap_or(1e4);
    Ok((width / heads, temperature))
}
