//! The sin-cos table a diffusers transformer adds to its patch tokens, read from its
//! `config.json` (`_class_name` and the keys its constructor passes to `PatchEmbed` or
//! `CogVideoXPatchEmbed`), as diffusers 0.42 builds it.

use serde_json::Value;

use crate::error::{Error, FrequencyError, Result};
use crate::grid::SincosGrid;

/// The diffusers transformers that add no fixed sin-cos table to their patch tokens (they
/// rotate, learn their positions, or have none): every class of
/// `tests/data/diffusers/TRANSFORMERS.md`, less the nine read below;
/// `tests/diffusers_matrix.rs` checks the list against that matrix.
pub const DIFFUSERS_WITHOUT_TABLE: [&str; 66] = [
    "AceStepTransformer1DModel",
    "AllegroTransformer3DModel",
    "AnyFlowFARTransformer3DModel",
    "AnyFlowTransformer3DModel",
    "AuraFlowTransformer2DModel",
    "BriaFibo2Transformer2DModel",
    "BriaFiboTransformer2DModel",
    "BriaTransformer2DModel",
    "ChromaTransformer2DModel",
    "ChronoEditTransformer3DModel",
    "CogView4Transformer2DModel",
    "Cosmos3OmniTransformer",
    "CosmosTransformer3DModel",
    "DreamLiteTransformer2DModel",
    "EasyAnimateTransformer3DModel",
    "ErnieImageTransformer2DModel",
    "Flux2Transformer2DModel",
    "Flux3Transformer2DModel",
    "FluxTransformer2DModel",
    "GlmImageTransformer2DModel",
    "HeliosTransformer3DModel",
    "HiDreamImageTransformer2DModel",
    "HunyuanDiT2DControlNetModel",
    "HunyuanDiT2DModel",
    "HunyuanImageTransformer2DModel",
    "HunyuanVideo15Transformer3DModel",
    "HunyuanVideoFramepackTransformer3DModel",
    "HunyuanVideoTransformer3DModel",
    "Ideogram4Transformer2DModel",
    "JoyImageEditPlusTransformer3DModel",
    "JoyImageEditTransformer3DModel",
    "Kandinsky5Transformer3DModel",
    "Kandinsky6SRTransformer3DModel",
    "Kandinsky6Transformer3DModel",
    "Krea2Transformer2DModel",
    "LTX2VideoTransformer3DModel",
    "LTXVideoTransformer3DModel",
    "LongCatAudioDiTTransformer",
    "LongCatAudioDiTVae",
    "LongCatImageTransformer2DModel",
    "Lumina2Transformer2DModel",
    "LuminaNextDiT2DModel",
    "MiniMaxH3Transformer3DModel",
    "MiniMaxMusic3Transformer1DModel",
    "MochiTransformer3DModel",
    "MotifVideoTransformer3DModel",
    "NucleusMoEImageTransformer2DModel",
    "OvisImageTransformer2DModel",
    "PRXTransformer2DModel",
    "PriorTransformer",
    "QwenImage21Transformer2DModel",
    "QwenImageTransformer2DModel",
    "RFD4ProteinaTransformer",
    "SanaTransformer2DModel",
    "SanaVideoTransformer3DModel",
    "SanaWMLTX2RefinerTransformer3DModel",
    "SanaWMTransformer3DModel",
    "SkyReelsV2Transformer3DModel",
    "StableAudio3DiTModel",
    "StableAudioDiTModel",
    "TransformerTemporalModel",
    "WanAnimate2Transformer3DModel",
    "WanAnimateTransformer3DModel",
    "WanTransformer3DModel",
    "WanVACETransformer3DModel",
    "ZImageTransformer2DModel",
];

/// A diffusers `config.json` (an object) and the reading of its keys.
pub(super) struct Keys<'a>(pub(super) &'a serde_json::Map<String, Value>);

impl Keys<'_> {
    pub(super) fn bad(key: &str, expected: &'static str, found: Option<&Value>) -> Error {
        Error::Frequency(FrequencyError::InvalidConfigValue {
            key: key.to_string(),
            expected,
            found: found.map_or_else(|| "nothing (the key is missing)".into(), Value::to_string),
        })
    }

    pub(super) fn u(&self, key: &str) -> Result<u64> {
        let v = self.0.get(key);
        v.and_then(Value::as_u64)
            .filter(|&n| n > 0)
            .ok_or_else(|| Self::bad(key, "a positive integer", v))
    }

    pub(super) fn f(&self, key: &str) -> Result<f64> {
        let v = self.0.get(key);
        v.and_then(Value::as_f64)
            .filter(|x| x.is_finite() && *x > 0.0)
            .ok_or_else(|| Self::bad(key, "a positive number", v))
    }

    /// `None` where the key is absent or null.
    pub(super) fn opt_u(&self, key: &str) -> Result<Option<u64>> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.u(key).map(Some),
        }
    }

    /// `None` where the key is absent or null.
    pub(super) fn opt_f(&self, key: &str) -> Result<Option<f64>> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.f(key).map(Some),
        }
    }

    /// `None` where the key is absent or null.
    pub(super) fn opt_flag(&self, key: &str) -> Result<Option<bool>> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.flag(key).map(Some),
        }
    }

    /// A number that may be zero or negative (a shift).
    pub(super) fn opt_number(&self, key: &str) -> Result<Option<f64>> {
        let v = self.0.get(key);
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x
                .as_f64()
                .filter(|x| x.is_finite())
                .map(Some)
                .ok_or_else(|| Self::bad(key, "a finite number", v)),
        }
    }

    /// A string (`norm_type`), `None` where absent or null.
    pub(super) fn opt_str(&self, key: &str) -> Result<Option<&str>> {
        let v = self.0.get(key);
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(Self::bad(key, "a string", v)),
        }
    }

    /// The error for a `_class_name` this module does not know.
    pub(super) fn unknown_class(&self) -> Error {
        Self::bad(
            "_class_name",
            "a diffusers 0.42 transformer (tests/data/diffusers/TRANSFORMERS.md)",
            self.0.get("_class_name"),
        )
    }

    pub(super) fn flag(&self, key: &str) -> Result<bool> {
        let v = self.0.get(key);
        v.and_then(Value::as_bool)
            .ok_or_else(|| Self::bad(key, "true or false", v))
    }

    pub(super) fn inner_dim(&self) -> Result<u64> {
        let dim = self
            .u("num_attention_heads")?
            .checked_mul(self.u("attention_head_dim")?);
        dim.ok_or_else(|| Self::bad("attention_head_dim", "a width below 2^64", None))
    }
}

/// The most grid tokens a config's latent may ask for (16.7M: 140 times HunyuanVideo's 720p
/// video), so that an absurd latent is an error rather than an allocation that aborts.
const MAX_TOKENS: u64 = 1 << 24;

/// Checks that `sides` (patches along each axis) hold at most [`MAX_TOKENS`] tokens.
fn check_tokens(key: &str, sides: &[u64]) -> Result<()> {
    let n = sides.iter().try_fold(1u64, |acc, &x| acc.checked_mul(x));
    match n {
        Some(n) if n <= MAX_TOKENS => Ok(()),
        _ => Err(Keys::bad(key, "at most 2^24 patch tokens", None)),
    }
}

/// `latent / patch`, at least one token (diffusers' floor division).
fn tokens(latent: u64, patch: u64, key: &str) -> Result<u64> {
    match latent / patch {
        0 => Err(Keys::bad(
            key,
            "a latent size of at least one patch",
            Some(&latent.into()),
        )),
        n => Ok(n),
    }
}

/// The config's keys and its class, as diffusers loads it: the legacy `Transformer2DModel`
/// of published DiT and PixArt checkpoints is remapped by its `norm_type`
/// (`ada_norm_zero`: DiT, `ada_norm_single`: PixArt), as diffusers' `_CLASS_REMAPPING_DICT`
/// does; other `Transformer2DModel` configs are refused.
pub(super) fn read_class(config: &Value) -> Result<(Keys<'_>, &str)> {
    let obj = config
        .as_object()
        .ok_or(Error::Frequency(FrequencyError::ConfigNotObject {
            found: super::config::kind(config),
        }))?;
    let keys = Keys(obj);
    let class = obj.get("_class_name").and_then(Value::as_str).unwrap_or("");
    if class != "Transformer2DModel" {
        return Ok((keys, class));
    }
    let class = match keys.opt_str("norm_type")? {
        Some("ada_norm_zero") => "DiTTransformer2DModel",
        Some("ada_norm_single") => "PixArtTransformer2DModel",
        _ => {
            return Err(Keys::bad(
                "norm_type",
                "ada_norm_zero (DiT) or ada_norm_single (PixArt): other Transformer2DModel \
                 configs are not read",
                obj.get("norm_type"),
            ));
        }
    };
    Ok((keys, class))
}

impl SincosGrid {
    /// The sin-cos table a diffusers transformer adds to its patch tokens, from its
    /// `config.json` (feature `hf-config`): DiT, PixArt (`interpolation_scale`, by default
    /// `max(sample_size / 64, 1)`), SD3 (the `pos_embed_max_size` table center-cropped),
    /// OmniGen (likewise, at base size 64), CogView3Plus (the table's top-left corner; its
    /// text rows are the caller's [`SincosGrid::zero_rows`]), Latte (each frame's 2-D
    /// table; its temporal table over `video_length` frames is
    /// `SinusoidalSpec::new(inner_dim).layout(SinusoidalLayout::Concatenated)`), CogVideoX
    /// and ConsisID (3-D, `max_text_seq_length` zero rows; none with rotary or learned
    /// positions). `latent` is the latent the transformer is given, `[height, width]` (2-D,
    /// Latte's frames included) or `[frames, height, width]` (3-D, latent frames); `None`
    /// takes the config's sample size (OmniGen, which has none: its whole table). `Ok(None)` for a transformer that adds no such table
    /// ([`DIFFUSERS_WITHOUT_TABLE`]); an unknown `_class_name` or a bad key is an error.
    /// Published DiT and PixArt configs naming `Transformer2DModel` read as diffusers remaps
    /// them (by `norm_type`).
    pub fn from_diffusers_config(config: &Value, latent: Option<&[u64]>) -> Result<Option<Self>> {
        let (keys, class) = read_class(config)?;
        let grid = Self::read_diffusers(&keys, class, latent)?;
        // A width the table's blocks cannot cover (diffusers raises too) is an error here,
        // not a grid that fails later.
        if let Some(grid) = &grid {
            grid.validate()?;
        }
        Ok(grid)
    }

    /// The table of a class (read by [`SincosGrid::from_diffusers_config`]).
    fn read_diffusers(
        keys: &Keys<'_>,
        class: &str,
        latent: Option<&[u64]>,
    ) -> Result<Option<Self>> {
        match class {
            "DiTTransformer2DModel"
            | "PixArtTransformer2DModel"
            | "SD3Transformer2DModel"
            | "LatteTransformer3DModel" => patch_table(keys, class, latent).map(Some),
            "CogView3PlusTransformer2DModel" | "OmniGenTransformer2DModel" => {
                max_size_table(keys, class, latent).map(Some)
            }
            "CogVideoXTransformer3DModel" | "ConsisIDTransformer3DModel" => {
                video_table(keys, class, latent)
            }
            c if DIFFUSERS_WITHOUT_TABLE.contains(&c) => Ok(None),
            _ => Err(keys.unknown_class()),
        }
    }
}

/// `PatchEmbed(height=sample_size, width=sample_size, ...)` as the 2-D classes build it.
fn patch_table(keys: &Keys<'_>, class: &str, latent: Option<&[u64]>) -> Result<SincosGrid> {
    let (sample, p) = (keys.u("sample_size")?, keys.u("patch_size")?);
    let dim = keys.inner_dim()?;
    let base = (sample / p) as f64;
    let [h, w] = match latent {
        None => [sample, sample],
        Some(&[h, w]) => [h, w],
        Some(_) => return Err(Keys::bad("latent", "[height, width]", None)),
    };
    let [h, w] = [
        tokens(h, p, "latent height")?,
        tokens(w, p, "latent width")?,
    ];
    check_tokens("latent", &[h, w])?;
    if class == "SD3Transformer2DModel" {
        let max = keys.u("pos_embed_max_size")?;
        // The table's side is built whole before the crop.
        check_tokens("pos_embed_max_size", &[max])?;
        if h > max || w > max {
            return Err(Keys::bad(
                "pos_embed_max_size",
                "at least the latent's patches a side",
                Some(&max.into()),
            ));
        }
        return SincosGrid::diffusers_cropped(dim, max, [h, w], base, 1.0);
    }
    let scale = match class {
        "PixArtTransformer2DModel" => keys
            .opt_u("interpolation_scale")?
            .unwrap_or((sample / 64).max(1)) as f64,
        "LatteTransformer3DModel" => (sample / 64).max(1) as f64,
        _ => 1.0,
    };
    SincosGrid::diffusers_2d(dim, [h, w], base, scale)
}

/// The tables built at `pos_embed_max_size` a side and cropped by the forward: CogView3Plus'
/// top-left corner (base size `pos_embed_max_size`; its text rows, first, are the caller's
/// [`SincosGrid::zero_rows`]) and OmniGen's center (base size 64, the default of its patch
/// embedding). Without a latent: CogView3Plus' `sample_size`, OmniGen's whole table.
fn max_size_table(keys: &Keys<'_>, class: &str, latent: Option<&[u64]>) -> Result<SincosGrid> {
    let p = keys.u("patch_size")?;
    let max = keys.opt_u("pos_embed_max_size")?;
    let omnigen = class == "OmniGenTransformer2DModel";
    let max = max.unwrap_or(if omnigen { 192 } else { 128 });
    check_tokens("pos_embed_max_size", &[max])?;
    let [h, w] = match latent {
        Some(&[h, w]) => [
            tokens(h, p, "latent height")?,
            tokens(w, p, "latent width")?,
        ],
        Some(_) => return Err(Keys::bad("latent", "[height, width]", None)),
        None if omnigen => [max, max],
        None => {
            let side = tokens(keys.u("sample_size")?, p, "sample_size")?;
            [side, side]
        }
    };
    if h > max || w > max {
        return Err(Keys::bad(
            "pos_embed_max_size",
            "at least the latent's patches a side",
            Some(&max.into()),
        ));
    }
    if omnigen {
        return SincosGrid::diffusers_cropped(keys.u("hidden_size")?, max, [h, w], 64.0, 1.0);
    }
    SincosGrid::diffusers_top_left(keys.inner_dim()?, max, [h, w])
}

/// `CogVideoXPatchEmbed` with fixed sin-cos embeddings (rotary or learned ones: `None`).
fn video_table(keys: &Keys<'_>, class: &str, latent: Option<&[u64]>) -> Result<Option<SincosGrid>> {
    // ConsisID does not pass its learned-positions flag to the patch embedding.
    let learned = class == "CogVideoXTransformer3DModel"
        && keys.0.contains_key("use_learned_positional_embeddings")
        && keys.flag("use_learned_positional_embeddings")?;
    if keys.flag("use_rotary_positional_embeddings")? || learned {
        return Ok(None);
    }
    let (p, r) = (keys.u("patch_size")?, keys.u("temporal_compression_ratio")?);
    let [f, h, w] = match latent {
        None => {
            let frames = (keys.u("sample_frames")? - 1) / r + 1;
            [frames, keys.u("sample_height")?, keys.u("sample_width")?]
        }
        Some(&[f, h, w]) if f > 0 => [f, h, w],
        Some(_) => {
            return Err(Keys::bad(
                "latent",
                "[frames, height, width], frames > 0",
                None,
            ));
        }
    };
    let [h, w] = [
        tokens(h, p, "latent height")?,
        tokens(w, p, "latent width")?,
    ];
    check_tokens("latent", &[f, h, w])?;
    let grid = SincosGrid::diffusers_3d(
        keys.inner_dim()?,
        [f, h, w],
        keys.f("spatial_interpolation_scale")?,
        keys.f("temporal_interpolation_scale")?,
    )?;
    Ok(Some(grid.zero_rows(keys.u("max_text_seq_length")?)))
}
