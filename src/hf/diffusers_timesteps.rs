//! The sinusoidal projections of a scalar (the timestep, the guidance, a size condition) a
//! diffusers transformer holds, read from its `config.json` as diffusers 0.42 builds them.
//!
//! One rule per module, class by class, from diffusers' constructors; every rule is checked by
//! `tests/diffusers_timesteps.rs` against the modules diffusers builds from each class's
//! default config and from that config with each key changed on its own
//! (`tests/data/diffusers/timestep_configs.py`).

use serde_json::Value;

use super::diffusers::{Keys, read_class};
use crate::error::Result;
use crate::sinusoid::SinusoidalSpec;

/// One sinusoidal projection module of a diffusers transformer: what it computes from the
/// f32 scalars it is given (the timesteps, as the transformer's forward passes them).
#[derive(Clone, Debug, PartialEq)]
pub struct TimestepProjection {
    /// The module's path in the model (`time_text_embed.time_proj`): the prefix of the keys
    /// of the layers that read its output in the model's weights.
    pub path: String,
    /// diffusers' class of the module (`Timesteps`, `BriaTimesteps`, ...).
    pub module: &'static str,
    /// What the module computes: [`SinusoidalSpec::timesteps`] with its width, order and
    /// shift, [`SinusoidalSpec::max_period`] and [`SinusoidalSpec::freq_scale`] (diffusers'
    /// `scale`).
    pub spec: SinusoidalSpec,
    /// A factor the module multiplies its input by, in f32, before the projection
    /// (QwenImage 2.1's `time_factor`): pass `f32(t * input_scale)` as the position. 1 for
    /// the others. A multiplication in the transformer's forward (FLUX's `timestep * 1000`
    /// in the hidden dtype) is the caller's, as in diffusers, and not listed here.
    pub input_scale: f32,
}

/// The width of a projection.
#[derive(Clone, Copy)]
enum Width {
    /// A constant.
    Fixed(u64),
    /// A key of the config, with diffusers' default.
    Key(&'static str, u64),
    /// A key divided by a constant (Chroma's `approximator_num_channels // 4`).
    KeyOver(&'static str, u64, u64),
    /// `num_attention_heads * attention_head_dim`.
    Inner,
}

/// A parameter: a constant, or a key of the config with diffusers' default.
#[derive(Clone, Copy)]
enum Param<T> {
    Is(T),
    Key(&'static str, T),
}

/// When a module exists.
#[derive(Clone, Copy)]
enum When {
    Always,
    /// A flag of the config is on (false where absent).
    Flag(&'static str),
    /// A flag of the config is off (or absent).
    NotFlag(&'static str),
    /// One of two flags is on.
    EitherFlag(&'static str, &'static str),
    /// A key of the config is set (not absent or null).
    KeySet(&'static str),
    /// PixArt's `use_additional_conditions`: by default, `sample_size == 128`.
    AdditionalConditions,
    /// `norm_type` is this (with diffusers' default).
    NormType(&'static str, &'static str),
}

/// One module: its path (`{i}` for each of `num_layers` blocks), class, width, order,
/// shift, scale, max period, input factor and condition.
#[derive(Clone, Copy)]
struct Rule {
    path: &'static str,
    module: &'static str,
    width: Width,
    flip: Param<bool>,
    shift: Param<f64>,
    scale: Param<f64>,
    period: Param<f64>,
    factor: f32,
    when: When,
}

/// diffusers' `Timesteps(width, True, 0)` at `path`, the most common projection.
const fn ts(path: &'static str, width: Width) -> Rule {
    Rule {
        path,
        module: "Timesteps",
        width,
        flip: Param::Is(true),
        shift: Param::Is(0.0),
        scale: Param::Is(1.0),
        period: Param::Is(10_000.0),
        factor: 1.0,
        when: When::Always,
    }
}

const fn when(rule: Rule, when: When) -> Rule {
    Rule { when, ..rule }
}

const fn scaled(rule: Rule, scale: f64) -> Rule {
    Rule {
        scale: Param::Is(scale),
        ..rule
    }
}

/// `[sin | cos]`, shift 1: the exponent's denominator is `half - 1` (the form of
/// `ada_norm_zero` blocks and of several hand-written projections).
const fn sin_first_shifted(rule: Rule) -> Rule {
    Rule {
        flip: Param::Is(false),
        shift: Param::Is(1.0),
        ..rule
    }
}

/// A hand-written projection of class `module` that multiplies its input by `factor` in
/// f32 first.
const fn own(rule: Rule, module: &'static str, factor: f32) -> Rule {
    Rule {
        module,
        factor,
        ..rule
    }
}

const W256: Width = Width::Fixed(256);
const FREQ_DIM: Width = Width::Key("freq_dim", 256);
const WAN: &[Rule] = &[ts("condition_embedder.timesteps_proj", FREQ_DIM)];
const HUNYUAN_VIDEO: &[Rule] = &[
    ts("context_embedder.time_text_embed.time_proj", W256),
    ts("time_text_embed.time_proj", W256),
];
const LTX2: &[Rule] = &[
    ts("time_embed.emb.time_proj", W256),
    ts("audio_time_embed.emb.time_proj", W256),
    ts("av_cross_attn_video_scale_shift.emb.time_proj", W256),
    ts("av_cross_attn_audio_scale_shift.emb.time_proj", W256),
    ts("av_cross_attn_video_a2v_gate.emb.time_proj", W256),
    ts("av_cross_attn_audio_v2a_gate.emb.time_proj", W256),
    when(ts("prompt_adaln.emb.time_proj", W256), CROSS_ATTN_MOD),
    when(ts("audio_prompt_adaln.emb.time_proj", W256), CROSS_ATTN_MOD),
];
const CROSS_ATTN_MOD: When = When::EitherFlag("cross_attn_mod", "audio_cross_attn_mod");
/// CogVideoX' and ConsisID's `Timesteps(inner_dim, flip_sin_to_cos, freq_shift)`.
const COGVIDEOX: Rule = Rule {
    flip: Param::Key("flip_sin_to_cos", true),
    shift: Param::Key("freq_shift", 0.0),
    ..ts("time_proj", Width::Inner)
};
/// Sana's: one projection, or the time and guidance ones with `guidance_embeds`.
const SANA: &[Rule] = &[
    when(
        ts("time_embed.emb.time_proj", W256),
        When::NotFlag("guidance_embeds"),
    ),
    when(
        ts("time_embed.time_proj", W256),
        When::Flag("guidance_embeds"),
    ),
    when(
        ts("time_embed.guidance_condition_proj", W256),
        When::Flag("guidance_embeds"),
    ),
];
const COGVIEW: &[Rule] = &[
    ts("time_condition_embed.time_proj", Width::Inner),
    ts(
        "time_condition_embed.condition_proj",
        Width::Key("condition_dim", 256),
    ),
];
const BRIA: Rule = Rule {
    module: "BriaTimesteps",
    period: Param::Key("time_theta", 10_000.0),
    ..ts("time_embed.time_proj", W256)
};
/// The timestep projection of each `ada_norm_zero` block.
const ADA_NORM_ZERO: Rule = Rule {
    shift: Param::Is(1.0),
    ..ts("transformer_blocks.{i}.norm1.emb.time_proj", W256)
};
const PIXART: &[Rule] = &[
    ts("adaln_single.emb.time_proj", W256),
    Rule {
        when: When::AdditionalConditions,
        ..ts("adaln_single.emb.additional_condition_proj", W256)
    },
];
/// Z-Image's and FIBO 2's `TimestepEmbedder` (`[cos | sin]`, 256 wide).
const T_EMBEDDER: Rule = own(ts("t_embedder", W256), "TimestepEmbedder", 1.0);

/// Every diffusers transformer with a sinusoidal projection of a scalar, and its modules.
const RULES: &[(&str, &[Rule])] = &[
    (
        "AceStepTransformer1DModel",
        &[
            ts("time_embed.time_sinusoid", W256),
            ts("time_embed_r.time_sinusoid", W256),
        ],
    ),
    (
        "AllegroTransformer3DModel",
        &[ts("adaln_single.emb.time_proj", W256)],
    ),
    ("AnyFlowFARTransformer3DModel", WAN),
    ("AnyFlowTransformer3DModel", WAN),
    (
        "AuraFlowTransformer2DModel",
        &[scaled(ts("time_step_embed", W256), 1000.0)],
    ),
    ("BriaFibo2Transformer2DModel", &[T_EMBEDDER]),
    (
        "BriaFiboTransformer2DModel",
        &[
            Rule {
                module: "BriaFiboTimesteps",
                ..BRIA
            },
            Rule {
                path: "guidance_embed.time_proj",
                module: "BriaFiboTimesteps",
                when: When::Flag("guidance_embeds"),
                ..BRIA
            },
        ],
    ),
    ("BriaTransformer2DModel", &[BRIA]),
    (
        "ChromaTransformer2DModel",
        &[
            ts("time_text_embed.time_proj", CHROMA),
            ts("time_text_embed.guidance_proj", CHROMA),
        ],
    ),
    ("ChronoEditTransformer3DModel", WAN),
    (
        "CogVideoXTransformer3DModel",
        &[
            COGVIDEOX,
            when(
                Rule {
                    path: "ofs_proj",
                    width: Width::Key("ofs_embed_dim", 512),
                    ..COGVIDEOX
                },
                When::KeySet("ofs_embed_dim"),
            ),
        ],
    ),
    ("CogView3PlusTransformer2DModel", COGVIEW),
    ("CogView4Transformer2DModel", COGVIEW),
    ("ConsisIDTransformer3DModel", &[COGVIDEOX]),
    ("Cosmos3OmniTransformer", &[ts("time_proj", W256)]),
    (
        "CosmosTransformer3DModel",
        &[ts("time_embed.time_proj", Width::Inner)],
    ),
    ("DiTTransformer2DModel", &[ADA_NORM_ZERO]),
    (
        "DreamLiteTransformer2DModel",
        &[Rule {
            when: When::NormType("ada_norm_zero", "layer_norm"),
            ..ADA_NORM_ZERO
        }],
    ),
    ("EasyAnimateTransformer3DModel", &[COGVIDEOX]),
    (
        "ErnieImageTransformer2DModel",
        &[Rule {
            flip: Param::Is(false),
            ..ts("time_proj", Width::Key("hidden_size", 3072))
        }],
    ),
    (
        "Flux2Transformer2DModel",
        &[ts(
            "time_guidance_embed.time_proj",
            Width::Key("timestep_guidance_channels", 256),
        )],
    ),
    (
        "Flux3Transformer2DModel",
        &[ts("time_proj", Width::Key("timestep_channels", 256))],
    ),
    (
        "FluxTransformer2DModel",
        &[ts("time_text_embed.time_proj", W256)],
    ),
    (
        "GlmImageTransformer2DModel",
        &[
            ts(
                "time_condition_embed.time_proj",
                Width::Key("time_embed_dim", 512),
            ),
            ts(
                "time_condition_embed.condition_proj",
                Width::Key("condition_dim", 256),
            ),
        ],
    ),
    ("HeliosTransformer3DModel", WAN),
    (
        "HiDreamImageTransformer2DModel",
        &[ts("t_embedder.time_proj", W256)],
    ),
    ("HunyuanDiT2DControlNetModel", HUNYUAN_DIT),
    ("HunyuanDiT2DModel", HUNYUAN_DIT),
    (
        "HunyuanImageTransformer2DModel",
        &[
            ts("context_embedder.time_text_embed.time_proj", W256),
            ts("time_guidance_embed.time_proj", W256),
            when(ts("time_guidance_embed.time_proj_r", W256), MEANFLOW),
        ],
    ),
    (
        "HunyuanVideo15Transformer3DModel",
        &[
            ts("context_embedder.time_text_embed.time_proj", W256),
            ts("time_embed.time_proj", W256),
            when(ts("time_embed.time_proj_r", W256), MEANFLOW),
        ],
    ),
    ("HunyuanVideoFramepackTransformer3DModel", HUNYUAN_VIDEO),
    ("HunyuanVideoTransformer3DModel", HUNYUAN_VIDEO),
    (
        "Ideogram4Transformer2DModel",
        &[sin_first_shifted(own(
            ts("t_embedding", Width::Inner),
            "Ideogram4EmbedScalar",
            1e4,
        ))],
    ),
    (
        "JoyImageEditPlusTransformer3DModel",
        &[ts("condition_embedder.timesteps_proj", W256)],
    ),
    (
        "JoyImageEditTransformer3DModel",
        &[ts("condition_embedder.timesteps_proj", W256)],
    ),
    (
        "Kandinsky5Transformer3DModel",
        &[own(
            ts("time_embeddings", Width::Key("model_dim", 2048)),
            "Kandinsky5TimeEmbeddings",
            1.0,
        )],
    ),
    (
        "Kandinsky6SRTransformer3DModel",
        &[ts(
            "time_embeddings.time_proj",
            Width::Key("model_dim", 1792),
        )],
    ),
    (
        "Kandinsky6Transformer3DModel",
        &[
            ts(
                "video_time_embeddings.time_proj",
                Width::Key("model_dim", 4096),
            ),
            ts(
                "audio_time_embeddings.time_proj",
                Width::Key("model_dim", 4096),
            ),
        ],
    ),
    (
        "Krea2Transformer2DModel",
        &[own(
            ts("time_embed", Width::Key("timestep_embed_dim", 256)),
            "Krea2TimestepEmbedding",
            1000.0,
        )],
    ),
    ("LTX2VideoTransformer3DModel", LTX2),
    (
        "LTXVideoTransformer3DModel",
        &[ts("time_embed.emb.time_proj", W256)],
    ),
    (
        "LatteTransformer3DModel",
        &[
            Rule {
                when: When::NormType("ada_norm_zero", "ada_norm_single"),
                ..ADA_NORM_ZERO
            },
            Rule {
                path: "temporal_transformer_blocks.{i}.norm1.emb.time_proj",
                when: When::NormType("ada_norm_zero", "ada_norm_single"),
                ..ADA_NORM_ZERO
            },
            ts("adaln_single.emb.time_proj", W256),
        ],
    ),
    (
        "LongCatAudioDiTTransformer",
        &[sin_first_shifted(own(
            ts("time_embed.time_embed", W256),
            "AudioDiTSinusPositionEmbedding",
            1000.0,
        ))],
    ),
    (
        "LongCatImageTransformer2DModel",
        &[ts("time_embed.time_proj", W256)],
    ),
    (
        "Lumina2Transformer2DModel",
        &[ts("time_caption_embed.time_proj", W256)],
    ),
    (
        "LuminaNextDiT2DModel",
        &[ts("time_caption_embed.time_proj", W256)],
    ),
    ("MiniMaxH3Transformer3DModel", &[ts("time_proj", FREQ_DIM)]),
    (
        "MochiTransformer3DModel",
        &[ts(
            "time_embed.time_proj",
            Width::Key("time_embed_dim", 256),
        )],
    ),
    (
        "MotifVideoTransformer3DModel",
        &[ts("time_text_embed.time_proj", W256)],
    ),
    (
        "NucleusMoEImageTransformer2DModel",
        &[scaled(
            ts("time_text_embed.time_proj", Width::Inner),
            1000.0,
        )],
    ),
    (
        "OmniGenTransformer2DModel",
        &[Rule {
            flip: Param::Key("flip_sin_to_cos", true),
            shift: Param::Key("downscale_freq_shift", 0.0),
            ..ts("time_proj", Width::Key("time_step_dim", 256))
        }],
    ),
    ("OvisImageTransformer2DModel", &[ts("time_proj", W256)]),
    (
        "PRXTransformer2DModel",
        &[Rule {
            module: "get_timestep_embedding",
            scale: Param::Key("time_factor", 1000.0),
            period: Param::Key("time_max_period", 10_000.0),
            ..ts("time_in", W256)
        }],
    ),
    ("PixArtTransformer2DModel", PIXART),
    ("PriorTransformer", &[ts("time_proj", Width::Inner)]),
    (
        "QwenImage21Transformer2DModel",
        &[own(
            ts("time_text_embed.time_proj", W256),
            "QwenImage21TemporalTimesteps",
            1000.0,
        )],
    ),
    (
        "QwenImageTransformer2DModel",
        &[scaled(ts("time_text_embed.time_proj", W256), 1000.0)],
    ),
    (
        "SD3Transformer2DModel",
        &[ts("time_text_embed.time_proj", W256)],
    ),
    ("SanaTransformer2DModel", SANA),
    ("SanaVideoTransformer3DModel", SANA),
    ("SanaWMLTX2RefinerTransformer3DModel", LTX2),
    ("SanaWMTransformer3DModel", &[ts("time_proj", W256)]),
    (
        "SkyReelsV2Transformer3DModel",
        &[Rule {
            module: "SkyReelsV2Timesteps",
            ..WAN[0]
        }],
    ),
    (
        "WanAnimate2Transformer3DModel",
        &[ts("timesteps_proj", FREQ_DIM)],
    ),
    ("WanAnimateTransformer3DModel", WAN),
    ("WanTransformer3DModel", WAN),
    ("WanVACETransformer3DModel", WAN),
    ("ZImageTransformer2DModel", &[T_EMBEDDER]),
];

const MEANFLOW: When = When::Flag("use_meanflow");
const CHROMA: Width = Width::KeyOver("approximator_num_channels", 64, 4);
const HUNYUAN_DIT: &[Rule] = &[
    ts("time_extra_emb.time_proj", W256),
    ts("time_extra_emb.size_proj", W256),
];

/// The diffusers transformers with no sinusoidal projection of a scalar (they take no
/// timestep, or project it by learned or random Fourier features: MiniMax Music 3, Stable
/// Audio; or compute it inline where no module holds it: RFD4-Proteina), and the container
/// of several ControlNets. `tests/diffusers_timesteps.rs` checks the list against diffusers.
pub const DIFFUSERS_WITHOUT_PROJECTION: [&str; 7] = [
    "HunyuanDiT2DMultiControlNetModel",
    "LongCatAudioDiTVae",
    "MiniMaxMusic3Transformer1DModel",
    "RFD4ProteinaTransformer",
    "StableAudio3DiTModel",
    "StableAudioDiTModel",
    "TransformerTemporalModel",
];

impl<T: Copy> Param<T> {
    fn read(self, get: impl FnOnce(&'static str) -> Result<Option<T>>) -> Result<T> {
        match self {
            Param::Is(v) => Ok(v),
            Param::Key(key, default) => Ok(get(key)?.unwrap_or(default)),
        }
    }
}

impl Rule {
    fn width(&self, keys: &Keys<'_>) -> Result<u64> {
        match self.width {
            Width::Fixed(w) => Ok(w),
            Width::Key(key, default) => Ok(keys.opt_u(key)?.unwrap_or(default)),
            Width::KeyOver(key, default, d) => Ok(keys.opt_u(key)?.unwrap_or(default) / d),
            Width::Inner => keys.inner_dim(),
        }
    }

    fn exists(&self, keys: &Keys<'_>) -> Result<bool> {
        match self.when {
            When::Always => Ok(true),
            When::Flag(key) => Ok(keys.opt_flag(key)?.unwrap_or(false)),
            When::NotFlag(key) => Ok(!keys.opt_flag(key)?.unwrap_or(false)),
            When::EitherFlag(a, b) => {
                Ok(keys.opt_flag(a)?.unwrap_or(false) || keys.opt_flag(b)?.unwrap_or(false))
            }
            When::KeySet(key) => Ok(keys.opt_u(key)?.is_some()),
            When::AdditionalConditions => match keys.opt_flag("use_additional_conditions")? {
                Some(on) => Ok(on),
                None => Ok(keys.u("sample_size")? == 128),
            },
            When::NormType(norm, default) => {
                Ok(keys.opt_str("norm_type")?.unwrap_or(default) == norm)
            }
        }
    }

    /// What the module computes in a model of config `keys`.
    fn spec(&self, keys: &Keys<'_>) -> Result<SinusoidalSpec> {
        let flip = self.flip.read(|k| keys.opt_flag(k))?;
        let shift = self.shift.read(|k| keys.opt_number(k))?;
        let spec = SinusoidalSpec::timesteps(self.width(keys)?, flip, shift)
            .max_period(self.period.read(|k| keys.opt_f(k))?)
            .freq_scale(self.scale.read(|k| keys.opt_f(k))?);
        spec.validate()?;
        Ok(spec)
    }

    /// The modules of this rule in a model of config `keys`.
    fn read(&self, keys: &Keys<'_>, out: &mut Vec<TimestepProjection>) -> Result<()> {
        if !self.exists(keys)? {
            return Ok(());
        }
        let spec = self.spec(keys)?;
        let blocks = match self.path.contains("{i}") {
            true => keys.u("num_layers")?,
            false => 1,
        };
        // A config asking for more blocks than any model has is an error, not a long loop.
        if blocks > 4096 {
            return Err(Keys::bad("num_layers", "at most 4096 blocks", None));
        }
        for i in 0..blocks {
            out.push(TimestepProjection {
                path: self.path.replace("{i}", &i.to_string()),
                module: self.module,
                spec,
                input_scale: self.factor,
            });
        }
        Ok(())
    }
}

impl TimestepProjection {
    /// The sinusoidal projections of a scalar in a diffusers transformer, from its
    /// `config.json` (feature `hf-config`): every `Timesteps` module diffusers 0.42 builds
    /// from that config, and the hand-written projections of the same form (Bria's and
    /// QwenImage 2.1's wrappers, Z-Image's, Kandinsky 5's, Krea 2's, Ideogram 4's, LongCat
    /// Audio's, PRX's), in the order of the model's modules. Empty for a transformer with
    /// none ([`DIFFUSERS_WITHOUT_PROJECTION`]). Published DiT and PixArt configs naming
    /// `Transformer2DModel` read as diffusers remaps them. An unknown `_class_name` or a bad
    /// key is an error.
    pub fn from_diffusers_config(config: &Value) -> Result<Vec<TimestepProjection>> {
        let (keys, class) = read_class(config)?;
        if let Some((_, rules)) = RULES.iter().find(|(c, _)| *c == class) {
            let mut out = Vec::new();
            for rule in *rules {
                rule.read(&keys, &mut out)?;
            }
            return Ok(out);
        }
        if DIFFUSERS_WITHOUT_PROJECTION.contains(&class) {
            return Ok(Vec::new());
        }
        Err(keys.unknown_class())
    }
}
