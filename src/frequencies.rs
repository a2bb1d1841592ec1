//! Host-side frequency builders: every RoPE scaling type as per-pair angular frequencies in f64.
//!
//! A rotary embedding of rotary dimension `r` rotates pair `j` (`0 <= j < r/2`) at position `p`
//! by the angle `p * f_j`. Unscaled, `f_j = base^(-2j/r)` (RoFormer). Each long-context scaling
//! method of HF transformers (`rope_type`) changes only the `f_j` and, for some, adds one
//! attention factor that multiplies cos and sin. [`Scaling::frequencies`] computes both on the
//! host in f64, so one shader serves every method.
//!
//! The formulas follow HF transformers `modeling_rope_utils.py` as of the 5.x releases (older
//! releases differ: up to 4.50 YaRN ignored `mscale` and took its correction range from
//! `max_position_embeddings`; 4.51–4.55 replaced an explicit YaRN `factor`, transformers issue
//! #38224). HF computes in f32; this module computes the same expressions in f64, so its
//! values are the ones HF's would be without the f32 rounding.

use std::f64::consts::PI;

use crate::dd::Dd;

/// Frequency scaling of RoPE (HF transformers `rope_type`).
///
/// Build one by hand, with the helpers ([`Scaling::yarn`], [`Scaling::llama3`]), or, with the
/// cargo feature `hf-config`, from a model's `config.json` with `Scaling::from_hf_config`.
/// Parameters are checked when frequencies are computed; nothing here panics on bad input.
#[derive(Clone, Debug, PartialEq)]
pub enum Scaling {
    /// No scaling: `f_j = base^(-2j/r)` (HF `"default"`).
    Default,
    /// Position interpolation (HF `"linear"`, Chen et al. 2023): `f_j = base^(-2j/r) / factor`.
    Linear {
        /// Interpolation factor, finite and `>= 1`.
        factor: f64,
    },
    /// HF "dynamic": base recomputed from the current sequence length.
    ///
    /// For `seq_len > original_max_position_embeddings` the base becomes
    /// `base * (factor * seq_len / original - (factor - 1))^(r / (r - 2))`; otherwise the
    /// frequencies are the unscaled ones. Needs `r >= 4`.
    DynamicNtk {
        /// Scaling factor, finite and `>= 1`.
        factor: f64,
        /// The context length the model was trained with. HF 5.x takes it from the config's
        /// `max_position_embeddings` (not from `rope_scaling`); `from_hf_config` does the same.
        original_max_position_embeddings: u64,
    },
    /// Static NTK-aware base change: base' = base * factor^(r/(r-2)).
    ///
    /// Not an HF `rope_type` (bloc97's original proposal; HF only ships the dynamic variant).
    /// Needs `r >= 4`.
    NtkAware {
        /// Scaling factor, finite and `>= 1`.
        factor: f64,
    },
    /// YaRN (HF `"yarn"`, Peng et al. 2023): interpolated low frequencies, extrapolated high
    /// frequencies, a linear ramp between them, and an attention factor.
    Yarn {
        /// Context extension factor, finite and `>= 1`.
        factor: f64,
        /// Pretraining context length; the correction range is computed from it.
        original_max_position_embeddings: u64,
        /// Rotations at which the ramp starts (extrapolation only above); HF default 32.
        beta_fast: f64,
        /// Rotations at which the ramp ends (interpolation only below); HF default 1.
        beta_slow: f64,
        /// `mscale` of DeepSeek-style configs; `0.0` means "not given" (HF treats a missing and
        /// a zero value alike). Finite and `>= 0`.
        mscale: f64,
        /// `mscale_all_dim` of DeepSeek-style configs; `0.0` means "not given". When both this
        /// and `mscale` are non-zero the attention factor is
        /// `get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)`, otherwise
        /// `get_mscale(factor) = 0.1 ln(factor) + 1`. Finite and `>= 0`.
        mscale_all_dim: f64,
        /// An explicit attention factor, which replaces the computed one. Finite and `> 0`.
        attention_factor: Option<f64>,
        /// Round the correction range outwards to whole dimensions (HF default `true`;
        /// gpt-oss sets `false`).
        truncate: bool,
    },
    /// Llama 3.1 (HF `"llama3"`): wavelengths above `orig / low_freq_factor` are divided by
    /// `factor`, those below `orig / high_freq_factor` are kept, and the band between is
    /// interpolated smoothly.
    Llama3 {
        /// Scaling factor of the low frequencies, finite and `>= 1` (8 for Llama 3.1).
        factor: f64,
        /// Finite and `> 0` (1 for Llama 3.1).
        low_freq_factor: f64,
        /// Finite and greater than `low_freq_factor` (4 for Llama 3.1).
        high_freq_factor: f64,
        /// Pretraining context length (8192 for Llama 3.1).
        original_max_position_embeddings: u64,
    },
    /// LongRoPE (HF `"longrope"`, legacy Phi-3 `"su"`): one rescale factor per pair,
    /// `f_j = base^(-2j/r) / ext_j`, with `ext = long_factor` when
    /// `seq_len > original_max_position_embeddings` and `short_factor` otherwise.
    LongRope {
        /// Per-pair factors for short contexts; length `r/2`, finite and `> 0`.
        short_factor: Vec<f64>,
        /// Per-pair factors for long contexts; length `r/2`, finite and `> 0`.
        long_factor: Vec<f64>,
        /// Pretraining context length (4096 for Phi-3).
        original_max_position_embeddings: u64,
        /// Extended context length (131072 for Phi-3 128k); with the original length it
        /// gives the default attention factor.
        max_position_embeddings: u64,
        /// An explicit attention factor; otherwise `sqrt(1 + ln(s) / ln(orig))` with
        /// `s = max / orig`, or 1 when `s <= 1`. Finite and `> 0`.
        attention_factor: Option<f64>,
    },
    /// Gemma 4's global layers (HF `"proportional"`): over a rotary dim `r` equal to the head
    /// dim, the first `floor(partial_rotary_factor * r / 2)` pairs rotate with
    /// `f_j = base^(-2j/r) / factor` (the exponent over the whole head) and the remaining
    /// pairs not at all (`f_j = 0`). Unlike a partial rotary width, the rotated pairs of the
    /// half-split layout are `(j, j + r/2)` of the whole head.
    Proportional {
        /// Share of the head's pairs that rotate, in `(0, 1]` (0.25 for Gemma 4).
        partial_rotary_factor: f64,
        /// Divides every frequency, finite and `>= 1` (HF default 1).
        factor: f64,
    },
}

/// Per-pair angular frequencies (radians per position) and the attention factor that multiplies cos and sin.
///
/// `inv_freq[j]` is the frequency of pair `j`; the angle of that pair at position `p` is
/// `p * inv_freq[j]`. The vector has `rotary_dim / 2` entries.
#[derive(Clone, Debug, PartialEq)]
pub struct Frequencies {
    /// Frequency of each pair, radians per position; `rotary_dim / 2` entries.
    pub inv_freq: Vec<f64>,
    /// What rounding each frequency to f64 dropped: `inv_freq[j] + inv_freq_lo[j]` is the
    /// frequency to about 1e-32 relative (double-double) where the scaling is a power of the
    /// base (default, linear, NTK-aware, dynamic NTK, and the unscaled and fully scaled bands
    /// of Llama 3); 0 where the scaling's formula is only evaluated in f64 (YaRN, LongRoPE,
    /// Llama 3's blended band). The kernels use both words: at position 2^32 the f64
    /// rounding alone would move an angle by up to 2.4e-7 rad.
    pub inv_freq_lo: Vec<f64>,
    /// Factor that multiplies both cos and sin (1 for most scalings).
    ///
    /// This follows HF transformers: its rotary embedding returns `cos * attention_scaling`
    /// and `sin * attention_scaling`, so the factor is applied once, to cos and sin, and never
    /// again. vLLM's convention of multiplying it into its cos/sin cache (`mscale`) is the
    /// same number applied at the same place, so both engines use the value returned here.
    pub attention_factor: f64,
}

/// Errors of the frequency builders (the crate wraps this into its own error type).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FrequencyError {
    /// The rotary dimension is zero or odd.
    #[error(
        "rotary_dim must be even and greater than 0, got {rotary_dim}; RoPE rotates pairs of \
         elements, so pass the number of rotated elements of a head (head_dim, or \
         head_dim * partial_rotary_factor rounded down to an even number)"
    )]
    InvalidRotaryDim {
        /// The rotary dimension given.
        rotary_dim: u32,
    },
    /// The rotary dimension is too small for a scaling that raises to `r / (r - 2)`.
    #[error(
        "{scaling} scaling needs rotary_dim >= 4 (its base exponent is r/(r-2)), got \
         {rotary_dim}; use Scaling::Linear or no scaling for a single rotated pair"
    )]
    RotaryDimTooSmall {
        /// The scaling type.
        scaling: &'static str,
        /// The rotary dimension given.
        rotary_dim: u32,
    },
    /// The base (theta) is not a finite positive number.
    #[error(
        "base (rope_theta) must be finite and greater than 0, got {base}; typical values are \
         10000 (LLaMA 1/2), 500000 (Llama 3) or 1000000 (Qwen2)"
    )]
    InvalidBase {
        /// The base given.
        base: f64,
    },
    /// YaRN divides by `ln(base)`, which needs a base above 1.
    #[error(
        "YaRN needs base (rope_theta) greater than 1 (its correction range divides by \
         ln(base)), got {base}"
    )]
    YarnBaseTooSmall {
        /// The base given.
        base: f64,
    },
    /// A scaling factor is not finite or is below 1.
    #[error(
        "{scaling} `{name}` must be finite and at least 1, got {value}; a factor of s extends \
         the context about s times (1 means no scaling)"
    )]
    InvalidFactor {
        /// The scaling type.
        scaling: &'static str,
        /// The parameter's name.
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// A real-valued parameter is out of its range.
    #[error("{scaling} `{name}` must be {need}, got {value}")]
    InvalidParameter {
        /// The scaling type.
        scaling: &'static str,
        /// The parameter's name.
        name: &'static str,
        /// The value given.
        value: f64,
        /// The range it must be in.
        need: &'static str,
    },
    /// A context length is zero.
    #[error(
        "{scaling} `{name}` must be at least 1 (a number of positions), got 0; use the value \
         from the model's config.json"
    )]
    ZeroContextLength {
        /// The scaling type.
        scaling: &'static str,
        /// The parameter's name.
        name: &'static str,
    },
    /// YaRN's `beta_fast` is below `beta_slow`.
    #[error(
        "YaRN beta_fast ({beta_fast}) must not be below beta_slow ({beta_slow}); the ramp runs \
         from beta_fast rotations down to beta_slow (HF defaults: 32 and 1)"
    )]
    BetaFastBelowBetaSlow {
        /// `beta_fast` given.
        beta_fast: f64,
        /// `beta_slow` given.
        beta_slow: f64,
    },
    /// Llama 3's `high_freq_factor` is not above `low_freq_factor`.
    #[error(
        "Llama 3 low_freq_factor ({low_freq_factor}) must not be above high_freq_factor \
         ({high_freq_factor}); Llama 3.1 uses 1 and 4, Llama 4 1 and 1"
    )]
    LowFreqNotBelowHighFreq {
        /// `low_freq_factor` given.
        low_freq_factor: f64,
        /// `high_freq_factor` given.
        high_freq_factor: f64,
    },
    /// A LongRoPE factor list does not have one entry per pair.
    #[error(
        "LongRoPE {which} has {len} entries but rotary_dim {rotary_dim} has {expected} pairs; \
         the list needs one factor per pair (rotary_dim / 2 entries)"
    )]
    FactorListLength {
        /// `"short_factor"` or `"long_factor"`.
        which: &'static str,
        /// Its length.
        len: usize,
        /// `rotary_dim / 2`.
        expected: usize,
        /// The rotary dimension given.
        rotary_dim: u32,
    },
    /// A LongRoPE factor list holds a value that is not finite and positive.
    #[error("LongRoPE {which}[{index}] must be finite and greater than 0, got {value}")]
    FactorListValue {
        /// `"short_factor"` or `"long_factor"`.
        which: &'static str,
        /// Position in the list.
        index: usize,
        /// The value.
        value: f64,
    },
    /// The parameters are each valid but their combination overflows f64.
    #[error(
        "{scaling} frequencies are not finite for rotary_dim {rotary_dim} and base {base} \
         (an intermediate value overflowed); check that the parameters are the model's"
    )]
    NonFiniteResult {
        /// The scaling type.
        scaling: &'static str,
        /// The rotary dimension given.
        rotary_dim: u32,
        /// The base given.
        base: f64,
    },
    /// The HF config is not a JSON object.
    #[error("the HF config must be a JSON object (the contents of config.json), got {found}")]
    ConfigNotObject {
        /// The JSON type found.
        found: &'static str,
    },
    /// A key the rope type needs is missing from the HF config.
    #[error(
        "the HF config lacks `{key}`, which rope_type \"{rope_type}\" needs; add it (see the \
         model's config.json on the hub)"
    )]
    MissingConfigKey {
        /// The key.
        key: &'static str,
        /// The rope type being read.
        rope_type: String,
    },
    /// A key of the HF config has the wrong JSON type or value.
    #[error("the HF config's `{key}` must be {expected}, got {found}")]
    InvalidConfigValue {
        /// The key.
        key: String,
        /// What it must be.
        expected: &'static str,
        /// What it is.
        found: String,
    },
    /// The HF config's `model_type` is not a family whose RoPE this crate reads.
    #[error(
        "model_type \"{model_type}\" is not a family this crate reads RoPE for (llama, mistral, \
         mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, llama4, qwen2_vl, qwen2_5_vl, qwen3_vl, \
         phi3, gpt_neox, gptj, deepseek_v2, deepseek_v3, gemma3, gemma4, gpt_oss); build the RopeSpec \
         by hand from the model's modeling code"
    )]
    UnsupportedModelType {
        /// The model type found.
        model_type: String,
    },
    /// A config that HF transformers itself refuses or fails on.
    #[error("HF transformers 5.x cannot run {what}")]
    HfRejects {
        /// What it is.
        what: &'static str,
    },
    /// The HF config names a rope type this crate does not compute.
    #[error(
        "unsupported rope_type \"{rope_type}\"; supported: default, linear, dynamic, yarn, \
         longrope (or legacy su), llama3"
    )]
    UnsupportedRopeType {
        /// The rope type found.
        rope_type: String,
    },
    /// The HF config has one rope parameter set per layer type (e.g. Gemma 3).
    #[error(
        "the HF config has per-layer-type rope parameters ({layer_types}); pass the object for \
         one layer type, e.g. config[\"rope_parameters\"][\"full_attention\"], merged into the \
         config"
    )]
    PerLayerRopeParameters {
        /// The layer types found, comma-separated.
        layer_types: String,
    },
}

/// The unscaled frequencies base^(-2j/r), j in 0..r/2, computed exactly as `base.powf(-(2.0 * j as f64) / r as f64)`.
///
/// No validation: an odd `rotary_dim` gives `rotary_dim / 2` (rounded down) entries, zero gives
/// none, and a non-positive or non-finite base gives what `powf` gives. Use
/// [`Scaling::frequencies`] for checked input.
pub fn default_inv_freq(rotary_dim: u32, base: f64) -> Vec<f64> {
    default_inv_freq_dd(rotary_dim, base)
        .into_iter()
        .map(|f| f.hi)
        .collect()
}

/// [`default_inv_freq`] in double-double: `q^j` with `q = base^(-2/r)` formed in
/// double-double (`crate::dd`), each power one product from the last (the rounding errors
/// of 2^11 products stay below 1e-28 relative).
pub(crate) fn default_inv_freq_dd(rotary_dim: u32, base: f64) -> Vec<Dd> {
    let q = crate::dd::pow_neg_ratio(base, 2, u64::from(rotary_dim));
    let mut f = Dd::from_f64(1.0);
    (0..rotary_dim / 2)
        .map(|_| {
            let this = f;
            f = f.mul(q);
            this
        })
        .collect()
}

/// Splits double-double frequencies into [`Frequencies`] words.
fn split(f: Vec<Dd>) -> (Vec<f64>, Vec<f64>) {
    f.into_iter().map(|x| (x.hi, x.lo)).unzip()
}

/// YaRN's attention-magnitude correction: `0.1 * mscale * ln(scale) + 1`, or 1 when `scale <= 1`.
fn yarn_get_mscale(scale: f64, mscale: f64) -> f64 {
    if scale <= 1.0 {
        1.0
    } else {
        0.1 * mscale * scale.ln() + 1.0
    }
}

fn check_factor(
    scaling: &'static str,
    name: &'static str,
    value: f64,
) -> Result<(), FrequencyError> {
    if value.is_finite() && value >= 1.0 {
        Ok(())
    } else {
        Err(FrequencyError::InvalidFactor {
            scaling,
            name,
            value,
        })
    }
}

fn check_positive(
    scaling: &'static str,
    name: &'static str,
    value: f64,
) -> Result<(), FrequencyError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(FrequencyError::InvalidParameter {
            scaling,
            name,
            value,
            need: "finite and greater than 0",
        })
    }
}

fn check_non_negative(
    scaling: &'static str,
    name: &'static str,
    value: f64,
) -> Result<(), FrequencyError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(FrequencyError::InvalidParameter {
            scaling,
            name,
            value,
            need: "finite and at least 0 (0 means not given)",
        })
    }
}

fn check_context(
    scaling: &'static str,
    name: &'static str,
    value: u64,
) -> Result<(), FrequencyError> {
    if value == 0 {
        Err(FrequencyError::ZeroContextLength { scaling, name })
    } else {
        Ok(())
    }
}

fn check_factor_list(which: &'static str, list: &[f64]) -> Result<(), FrequencyError> {
    match list
        .iter()
        .enumerate()
        .find(|(_, x)| !(x.is_finite() && **x > 0.0))
    {
        Some((index, &value)) => Err(FrequencyError::FactorListValue {
            which,
            index,
            value,
        }),
        None => Ok(()),
    }
}

impl Scaling {
    /// YaRN with HF's defaults for everything but the factor and the original context length:
    /// `beta_fast` 32, `beta_slow` 1, no `mscale` / `mscale_all_dim` (attention factor
    /// `0.1 ln(factor) + 1`), no explicit attention factor, `truncate` true.
    pub fn yarn(factor: f64, original_max_position_embeddings: u64) -> Self {
        Scaling::Yarn {
            factor,
            original_max_position_embeddings,
            beta_fast: 32.0,
            beta_slow: 1.0,
            mscale: 0.0,
            mscale_all_dim: 0.0,
            attention_factor: None,
            truncate: true,
        }
    }

    /// Llama 3.1's scaling: factor 8, low_freq_factor 1, high_freq_factor 4, original 8192.
    pub fn llama3() -> Self {
        Scaling::Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 8192,
        }
    }

    /// Every check [`Scaling::frequencies`] makes for rotary dim `rotary_dim` and `base`,
    /// without computing (or allocating) anything: what a call on an empty view still
    /// validates.
    pub fn check_for(&self, rotary_dim: u64, base: f64) -> Result<(), FrequencyError> {
        let r32 = u32::try_from(rotary_dim).unwrap_or(u32::MAX);
        if rotary_dim == 0 || !rotary_dim.is_multiple_of(2) {
            return Err(FrequencyError::InvalidRotaryDim { rotary_dim: r32 });
        }
        if !(base.is_finite() && base > 0.0) {
            return Err(FrequencyError::InvalidBase { base });
        }
        self.validate()?;
        match self {
            Scaling::NtkAware { .. } | Scaling::DynamicNtk { .. } if rotary_dim < 4 => {
                Err(FrequencyError::RotaryDimTooSmall {
                    scaling: self.name(),
                    rotary_dim: r32,
                })
            }
            Scaling::Yarn { .. } if base <= 1.0 => Err(FrequencyError::YarnBaseTooSmall { base }),
            Scaling::LongRope {
                short_factor,
                long_factor,
                ..
            } => {
                for (which, list) in [("short_factor", short_factor), ("long_factor", long_factor)]
                {
                    if list.len() as u64 != rotary_dim / 2 {
                        return Err(FrequencyError::FactorListLength {
                            which,
                            len: list.len(),
                            expected: (rotary_dim / 2) as usize,
                            rotary_dim: r32,
                        });
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Whether the frequencies depend on the sequence length (dynamic NTK, LongRoPE).
    pub fn needs_seq_len(&self) -> bool {
        matches!(self, Scaling::DynamicNtk { .. } | Scaling::LongRope { .. })
    }

    /// Short name of the scaling type, as used in error messages.
    pub fn name(&self) -> &'static str {
        match self {
            Scaling::Default => "default",
            Scaling::Linear { .. } => "linear",
            Scaling::DynamicNtk { .. } => "dynamic NTK",
            Scaling::NtkAware { .. } => "NTK-aware",
            Scaling::Yarn { .. } => "YaRN",
            Scaling::Llama3 { .. } => "Llama 3",
            Scaling::LongRope { .. } => "LongRoPE",
            Scaling::Proportional { .. } => "proportional",
        }
    }

    /// Checks the parameters that do not depend on the rotary dimension or the base.
    pub fn validate(&self) -> Result<(), FrequencyError> {
        let s = self.name();
        match self {
            Scaling::Default => Ok(()),
            Scaling::Linear { factor } | Scaling::NtkAware { factor } => {
                check_factor(s, "factor", *factor)
            }
            Scaling::Proportional {
                partial_rotary_factor,
                factor,
            } => {
                check_factor(s, "factor", *factor)?;
                if !(partial_rotary_factor.is_finite()
                    && *partial_rotary_factor > 0.0
                    && *partial_rotary_factor <= 1.0)
                {
                    return Err(FrequencyError::InvalidParameter {
                        scaling: s,
                        name: "partial_rotary_factor",
                        value: *partial_rotary_factor,
                        need: "in (0, 1]",
                    });
                }
                Ok(())
            }
            Scaling::DynamicNtk {
                factor,
                original_max_position_embeddings,
            } => {
                check_factor(s, "factor", *factor)?;
                check_context(
                    s,
                    "original_max_position_embeddings",
                    *original_max_position_embeddings,
                )
            }
            Scaling::Yarn {
                factor,
                original_max_position_embeddings,
                beta_fast,
                beta_slow,
                mscale,
                mscale_all_dim,
                attention_factor,
                truncate: _,
            } => {
                check_factor(s, "factor", *factor)?;
                check_context(
                    s,
                    "original_max_position_embeddings",
                    *original_max_position_embeddings,
                )?;
                check_positive(s, "beta_fast", *beta_fast)?;
                check_positive(s, "beta_slow", *beta_slow)?;
                if beta_fast < beta_slow {
                    return Err(FrequencyError::BetaFastBelowBetaSlow {
                        beta_fast: *beta_fast,
                        beta_slow: *beta_slow,
                    });
                }
                check_non_negative(s, "mscale", *mscale)?;
                check_non_negative(s, "mscale_all_dim", *mscale_all_dim)?;
                if let Some(a) = attention_factor {
                    check_positive(s, "attention_factor", *a)?;
                }
                Ok(())
            }
            Scaling::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_position_embeddings,
            } => {
                check_factor(s, "factor", *factor)?;
                check_positive(s, "low_freq_factor", *low_freq_factor)?;
                check_positive(s, "high_freq_factor", *high_freq_factor)?;
                // Equal factors (Llama 4) leave the blended band empty, as in HF.
                if low_freq_factor > high_freq_factor {
                    return Err(FrequencyError::LowFreqNotBelowHighFreq {
                        low_freq_factor: *low_freq_factor,
                        high_freq_factor: *high_freq_factor,
                    });
                }
                check_context(
                    s,
                    "original_max_position_embeddings",
                    *original_max_position_embeddings,
                )
            }
            Scaling::LongRope {
                short_factor,
                long_factor,
                original_max_position_embeddings,
                max_position_embeddings,
                attention_factor,
            } => {
                check_factor_list("short_factor", short_factor)?;
                check_factor_list("long_factor", long_factor)?;
                check_context(
                    s,
                    "original_max_position_embeddings",
                    *original_max_position_embeddings,
                )?;
                check_context(s, "max_position_embeddings", *max_position_embeddings)?;
                if let Some(a) = attention_factor {
                    check_positive(s, "attention_factor", *a)?;
                }
                Ok(())
            }
        }
    }

    /// Frequencies for rotary dim `rotary_dim` (even, > 0), base `base` (> 0, finite), at current sequence length `seq_len` (used by DynamicNtk and LongRope; HF semantics).
    ///
    /// `seq_len` is the length HF's dynamic update sees: one more than the largest position in
    /// the batch. Dynamic NTK rescales only when it exceeds the original context; LongRoPE
    /// switches to its long factors when it exceeds `original_max_position_embeddings` (a
    /// `seq_len` of 0 selects the short factors, like HF's `seq_len=None` at init). The other
    /// scalings ignore it.
    pub fn frequencies(
        &self,
        rotary_dim: u32,
        base: f64,
        seq_len: u64,
    ) -> Result<Frequencies, FrequencyError> {
        if rotary_dim == 0 || !rotary_dim.is_multiple_of(2) {
            return Err(FrequencyError::InvalidRotaryDim { rotary_dim });
        }
        if !(base.is_finite() && base > 0.0) {
            return Err(FrequencyError::InvalidBase { base });
        }
        self.validate()?;
        let r = f64::from(rotary_dim);
        let half = (rotary_dim / 2) as usize;
        let unit = |f: Vec<Dd>| {
            let (inv_freq, inv_freq_lo) = split(f);
            Frequencies {
                inv_freq,
                inv_freq_lo,
                attention_factor: 1.0,
            }
        };
        let finite_base = |b: f64| {
            if b.is_finite() {
                Ok(b)
            } else {
                Err(FrequencyError::NonFiniteResult {
                    scaling: self.name(),
                    rotary_dim,
                    base,
                })
            }
        };
        let needs_two_pairs = |scaling: &'static str| {
            if rotary_dim < 4 {
                Err(FrequencyError::RotaryDimTooSmall {
                    scaling,
                    rotary_dim,
                })
            } else {
                Ok(())
            }
        };

        let out = match self {
            Scaling::Default => unit(default_inv_freq_dd(rotary_dim, base)),
            Scaling::Linear { factor } => {
                let f = default_inv_freq_dd(rotary_dim, base);
                unit(
                    f.into_iter()
                        .map(|x| x.div(Dd::from_f64(*factor)))
                        .collect(),
                )
            }
            Scaling::Proportional {
                partial_rotary_factor,
                factor,
            } => {
                // HF: int(partial * head // 2) pairs rotate.
                let angles = (partial_rotary_factor * r / 2.0).floor() as usize;
                let f = default_inv_freq_dd(rotary_dim, base);
                unit(
                    f.into_iter()
                        .enumerate()
                        .map(|(j, x)| {
                            if j < angles {
                                x.div(Dd::from_f64(*factor))
                            } else {
                                Dd::from_f64(0.0)
                            }
                        })
                        .collect(),
                )
            }
            Scaling::NtkAware { factor } => {
                needs_two_pairs(self.name())?;
                unit(default_inv_freq_dd(
                    rotary_dim,
                    finite_base(base * factor.powf(r / (r - 2.0)))?,
                ))
            }
            Scaling::DynamicNtk {
                factor,
                original_max_position_embeddings,
            } => {
                needs_two_pairs(self.name())?;
                let orig = *original_max_position_embeddings;
                if seq_len > orig {
                    let stretch = factor * seq_len as f64 / orig as f64 - (factor - 1.0);
                    unit(default_inv_freq_dd(
                        rotary_dim,
                        finite_base(base * stretch.powf(r / (r - 2.0)))?,
                    ))
                } else {
                    unit(default_inv_freq_dd(rotary_dim, base))
                }
            }
            Scaling::Yarn {
                factor,
                original_max_position_embeddings,
                beta_fast,
                beta_slow,
                mscale,
                mscale_all_dim,
                attention_factor,
                truncate,
            } => {
                if base <= 1.0 {
                    return Err(FrequencyError::YarnBaseTooSmall { base });
                }
                let orig = *original_max_position_embeddings as f64;
                // The dimension (2j) whose wavelength makes `rotations` turns over `orig`
                // positions: r * ln(orig / (2 pi rotations)) / (2 ln base).
                let dim_at =
                    |rotations: f64| r * (orig / (rotations * 2.0 * PI)).ln() / (2.0 * base.ln());
                let (mut low, mut high) = (dim_at(*beta_fast), dim_at(*beta_slow));
                if *truncate {
                    low = low.floor();
                    high = high.ceil();
                }
                let low = low.max(0.0);
                let mut high = high.min(r - 1.0);
                if low == high {
                    high += 0.001; // HF's guard against a zero-width ramp
                }
                let inv_freq = (0..half)
                    .map(|j| {
                        let pos_freq = base.powf(2.0 * j as f64 / r);
                        let extrapolated = 1.0 / pos_freq;
                        let interpolated = 1.0 / (factor * pos_freq);
                        let ramp = ((j as f64 - low) / (high - low)).clamp(0.0, 1.0);
                        let extrapolation_factor = 1.0 - ramp;
                        interpolated * (1.0 - extrapolation_factor)
                            + extrapolated * extrapolation_factor
                    })
                    .collect();
                let attention_factor = match attention_factor {
                    Some(a) => *a,
                    None if *mscale != 0.0 && *mscale_all_dim != 0.0 => {
                        yarn_get_mscale(*factor, *mscale)
                            / yarn_get_mscale(*factor, *mscale_all_dim)
                    }
                    None => yarn_get_mscale(*factor, 1.0),
                };
                Frequencies {
                    inv_freq_lo: vec![0.0; half],
                    inv_freq,
                    attention_factor,
                }
            }
            Scaling::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_position_embeddings,
            } => {
                let orig = *original_max_position_embeddings as f64;
                let low_freq_wavelen = orig / low_freq_factor;
                let high_freq_wavelen = orig / high_freq_factor;
                let inv_freq = default_inv_freq_dd(rotary_dim, base)
                    .into_iter()
                    .map(|fd| {
                        let f = fd.hi;
                        let wavelen = 2.0 * PI / f;
                        // HF's order: the low-frequency band first.
                        if wavelen > low_freq_wavelen {
                            fd.div(Dd::from_f64(*factor))
                        } else if wavelen < high_freq_wavelen {
                            fd
                        } else {
                            // HF's medium band; empty when the two factors are equal (Llama 4).
                            let smooth = (orig / wavelen - low_freq_factor)
                                / (high_freq_factor - low_freq_factor);
                            let smooth = if smooth.is_finite() { smooth } else { 0.0 };
                            Dd::from_f64((1.0 - smooth) * f / factor + smooth * f)
                        }
                    })
                    .collect();
                unit(inv_freq)
            }
            Scaling::LongRope {
                short_factor,
                long_factor,
                original_max_position_embeddings,
                max_position_embeddings,
                attention_factor,
            } => {
                for (which, list) in [("short_factor", short_factor), ("long_factor", long_factor)]
                {
                    if list.len() != half {
                        return Err(FrequencyError::FactorListLength {
                            which,
                            len: list.len(),
                            expected: half,
                            rotary_dim,
                        });
                    }
                }
                let orig = *original_max_position_embeddings;
                let ext = if seq_len > orig {
                    long_factor
                } else {
                    short_factor
                };
                let inv_freq = ext
                    .iter()
                    .enumerate()
                    .map(|(j, e)| 1.0 / (e * base.powf(2.0 * j as f64 / r)))
                    .collect();
                let attention_factor = match attention_factor {
                    Some(a) => *a,
                    None => longrope_attention_factor(
                        *max_position_embeddings as f64 / orig as f64,
                        orig,
                    ),
                };
                Frequencies {
                    inv_freq_lo: vec![0.0; half],
                    inv_freq,
                    attention_factor,
                }
            }
        };

        let finite = out.inv_freq.iter().all(|f| f.is_finite() && *f >= 0.0);
        if finite && out.attention_factor.is_finite() && out.attention_factor > 0.0 {
            Ok(out)
        } else {
            Err(FrequencyError::NonFiniteResult {
                scaling: self.name(),
                rotary_dim,
                base,
            })
        }
    }
}

/// LongRoPE's default attention factor for context stretch `factor`: `sqrt(1 + ln(factor) /
/// ln(orig))`, or 1 when `factor <= 1`.
pub(crate) fn longrope_attention_factor(factor: f64, orig: u64) -> f64 {
    if factor <= 1.0 {
        1.0
    } else {
        (1.0 + factor.ln() / (orig as f64).ln()).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOLDEN: &str = include_str!("../tests/data/rope_scaling_golden.json");

    // ---- a minimal JSON reader, so the golden test needs no optional dependency ----

    #[derive(Clone, Debug, PartialEq)]
    enum Json {
        Null,
        Bool(bool),
        Num(f64),
        Str(String),
        Arr(Vec<Json>),
        Obj(Vec<(String, Json)>),
    }

    impl Json {
        fn get(&self, key: &str) -> &Json {
            match self {
                Json::Obj(fields) => fields
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| v)
                    .unwrap_or(&Json::Null),
                _ => &Json::Null,
            }
        }
        fn num(&self) -> f64 {
            match self {
                Json::Num(x) => *x,
                other => panic!("expected a number, got {other:?}"),
            }
        }
        fn opt_num(&self) -> Option<f64> {
            match self {
                Json::Null => None,
                other => Some(other.num()),
            }
        }
        fn str(&self) -> &str {
            match self {
                Json::Str(s) => s,
                other => panic!("expected a string, got {other:?}"),
            }
        }
        fn arr(&self) -> &[Json] {
            match self {
                Json::Arr(a) => a,
                other => panic!("expected an array, got {other:?}"),
            }
        }
        fn nums(&self) -> Vec<f64> {
            self.arr().iter().map(Json::num).collect()
        }
    }

    struct Reader<'a> {
        s: &'a [u8],
        i: usize,
    }

    impl Reader<'_> {
        fn ws(&mut self) {
            while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
                self.i += 1;
            }
        }
        fn eat(&mut self, c: u8) {
            self.ws();
            assert_eq!(
                self.s[self.i], c,
                "JSON: expected {:?} at byte {}",
                c as char, self.i
            );
            self.i += 1;
        }
        fn lit(&mut self, word: &str, v: Json) -> Json {
            assert!(
                self.s[self.i..].starts_with(word.as_bytes()),
                "JSON: bad literal at {}",
                self.i
            );
            self.i += word.len();
            v
        }
        fn string(&mut self) -> String {
            self.eat(b'"');
            let mut out = String::new();
            loop {
                let c = self.s[self.i];
                self.i += 1;
                match c {
                    b'"' => return out,
                    b'\\' => {
                        let e = self.s[self.i];
                        self.i += 1;
                        match e {
                            b'n' => out.push('\n'),
                            b't' => out.push('\t'),
                            b'u' => {
                                let hex = std::str::from_utf8(&self.s[self.i..self.i + 4]).unwrap();
                                out.push(
                                    char::from_u32(u32::from_str_radix(hex, 16).unwrap()).unwrap(),
                                );
                                self.i += 4;
                            }
                            other => out.push(other as char),
                        }
                    }
                    _ => {
                        // Copy one UTF-8 sequence whole.
                        let start = self.i - 1;
                        while self.i < self.s.len() && (self.s[self.i] & 0xC0) == 0x80 {
                            self.i += 1;
                        }
                        out.push_str(std::str::from_utf8(&self.s[start..self.i]).unwrap());
                    }
                }
            }
        }
        fn value(&mut self) -> Json {
            self.ws();
            match self.s[self.i] {
                b'{' => {
                    self.i += 1;
                    let mut fields = Vec::new();
                    self.ws();
                    if self.s[self.i] == b'}' {
                        self.i += 1;
                        return Json::Obj(fields);
                    }
                    loop {
                        let k = self.string();
                        self.eat(b':');
                        fields.push((k, self.value()));
                        self.ws();
                        self.i += 1;
                        if self.s[self.i - 1] == b'}' {
                            return Json::Obj(fields);
                        }
                    }
                }
                b'[' => {
                    self.i += 1;
                    let mut items = Vec::new();
                    self.ws();
                    if self.s[self.i] == b']' {
                        self.i += 1;
                        return Json::Arr(items);
                    }
                    loop {
                        items.push(self.value());
                        self.ws();
                        self.i += 1;
                        if self.s[self.i - 1] == b']' {
                            return Json::Arr(items);
                        }
                    }
                }
                b'"' => Json::Str(self.string()),
                b't' => self.lit("true", Json::Bool(true)),
                b'f' => self.lit("false", Json::Bool(false)),
                b'n' => self.lit("null", Json::Null),
                _ => {
                    let start = self.i;
                    while self.i < self.s.len()
                        && matches!(
                            self.s[self.i],
                            b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'
                        )
                    {
                        self.i += 1;
                    }
                    let text = std::str::from_utf8(&self.s[start..self.i]).unwrap();
                    // Rust's float parsing is correctly rounded, so Python's repr round-trips.
                    Json::Num(
                        text.parse()
                            .unwrap_or_else(|_| panic!("JSON: bad number {text:?}")),
                    )
                }
            }
        }
    }

    fn parse(text: &str) -> Json {
        let mut r = Reader {
            s: text.as_bytes(),
            i: 0,
        };
        let v = r.value();
        r.ws();
        assert_eq!(r.i, text.len(), "JSON: trailing characters");
        v
    }

    /// The explicit scaling of a golden case.
    fn scaling_of(s: &Json) -> Scaling {
        let u = |k: &str| s.get(k).num() as u64;
        match s.get("type").str() {
            "default" => Scaling::Default,
            "linear" => Scaling::Linear {
                factor: s.get("factor").num(),
            },
            "ntk_aware" => Scaling::NtkAware {
                factor: s.get("factor").num(),
            },
            "dynamic_ntk" => Scaling::DynamicNtk {
                factor: s.get("factor").num(),
                original_max_position_embeddings: u("original_max_position_embeddings"),
            },
            "yarn" => Scaling::Yarn {
                factor: s.get("factor").num(),
                original_max_position_embeddings: u("original_max_position_embeddings"),
                beta_fast: s.get("beta_fast").num(),
                beta_slow: s.get("beta_slow").num(),
                mscale: s.get("mscale").num(),
                mscale_all_dim: s.get("mscale_all_dim").num(),
                attention_factor: s.get("attention_factor").opt_num(),
                truncate: *s.get("truncate") == Json::Bool(true),
            },
            "llama3" => Scaling::Llama3 {
                factor: s.get("factor").num(),
                low_freq_factor: s.get("low_freq_factor").num(),
                high_freq_factor: s.get("high_freq_factor").num(),
                original_max_position_embeddings: u("original_max_position_embeddings"),
            },
            "longrope" => Scaling::LongRope {
                short_factor: s.get("short_factor").nums(),
                long_factor: s.get("long_factor").nums(),
                original_max_position_embeddings: u("original_max_position_embeddings"),
                max_position_embeddings: u("max_position_embeddings"),
                attention_factor: s.get("attention_factor").opt_num(),
            },
            other => panic!("unknown golden scaling type {other}"),
        }
    }

    fn assert_rel(name: &str, what: &str, got: f64, want: f64) {
        let err = ((got - want) / want).abs();
        assert!(
            err <= 1e-12,
            "{name}: {what}: got {got:e}, want {want:e} (relative error {err:e})"
        );
    }

    fn golden_cases() -> Vec<Json> {
        parse(GOLDEN).get("cases").arr().to_vec()
    }

    #[test]
    fn golden_values_match_to_1e_12() {
        let cases = golden_cases();
        assert!(cases.len() >= 17, "golden file has {} cases", cases.len());
        for case in &cases {
            let name = case.get("name").str();
            let scaling = scaling_of(case.get("scaling"));
            let r = case.get("rotary_dim").num() as u32;
            let base = case.get("base").num();
            let seq_len = case.get("seq_len").num() as u64;
            let got = scaling
                .frequencies(r, base, seq_len)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let want = case.get("inv_freq").nums();
            assert_eq!(got.inv_freq.len(), want.len(), "{name}: length");
            for (j, (g, w)) in got.inv_freq.iter().zip(&want).enumerate() {
                assert_rel(name, &format!("inv_freq[{j}]"), *g, *w);
            }
            assert_rel(
                name,
                "attention_factor",
                got.attention_factor,
                case.get("attention_factor").num(),
            );
        }
    }

    #[test]
    fn golden_covers_every_scaling_type() {
        let kinds: Vec<String> = golden_cases()
            .iter()
            .map(|c| c.get("scaling").get("type").str().to_string())
            .collect();
        for k in [
            "default",
            "linear",
            "dynamic_ntk",
            "ntk_aware",
            "yarn",
            "llama3",
            "longrope",
        ] {
            assert!(kinds.iter().any(|x| x == k), "no golden case for {k}");
        }
    }

    #[test]
    fn default_inv_freq_is_the_documented_expression() {
        let f = default_inv_freq(128, 10_000.0);
        assert_eq!(f.len(), 64);
        // The double-double value rounded to f64: within one ulp of libm's powf (which
        // need not be correctly rounded).
        for (j, x) in f.iter().enumerate() {
            let p = 10_000f64.powf(-(2.0 * j as f64) / 128.0);
            assert!((x - p).abs() <= f64::EPSILON * p, "{j}: {x} vs {p}");
        }
        assert_eq!(f[0], 1.0);
        assert!(default_inv_freq(0, 10_000.0).is_empty());
        let d = Scaling::Default.frequencies(128, 10_000.0, 0).unwrap();
        assert_eq!(d.inv_freq, f);
        assert_eq!(d.attention_factor, 1.0);
    }

    #[test]
    fn dynamic_ntk_is_unscaled_up_to_the_original_length_and_grows_after() {
        let s = Scaling::DynamicNtk {
            factor: 2.0,
            original_max_position_embeddings: 2048,
        };
        let plain = default_inv_freq(64, 10_000.0);
        assert_eq!(s.frequencies(64, 10_000.0, 0).unwrap().inv_freq, plain);
        assert_eq!(s.frequencies(64, 10_000.0, 2048).unwrap().inv_freq, plain);
        let longer = s.frequencies(64, 10_000.0, 2049).unwrap().inv_freq;
        assert_eq!(longer[0], 1.0);
        assert!(longer[1..].iter().zip(&plain[1..]).all(|(a, b)| a < b));
    }

    #[test]
    fn ntk_aware_matches_its_base_change() {
        let got = Scaling::NtkAware { factor: 8.0 }
            .frequencies(128, 10_000.0, 0)
            .unwrap();
        let base = 10_000.0 * 8f64.powf(128.0 / 126.0);
        assert_eq!(got.inv_freq, default_inv_freq(128, base));
        // The lowest frequency is divided by exactly `factor`: that is the point of r/(r-2).
        let plain = default_inv_freq(128, 10_000.0);
        assert_rel("ntk", "last", got.inv_freq[63] * 8.0, plain[63]);
    }

    #[test]
    fn yarn_keeps_high_and_interpolates_low_frequencies() {
        let f = Scaling::yarn(4.0, 32_768).frequencies(128, 1e6, 0).unwrap();
        let plain = default_inv_freq(128, 1e6);
        assert_rel("yarn", "first", f.inv_freq[0], plain[0]);
        assert_rel("yarn", "last", f.inv_freq[63] * 4.0, plain[63]);
        assert_rel(
            "yarn",
            "attention",
            f.attention_factor,
            0.1 * 4f64.ln() + 1.0,
        );
        // factor 1: nothing to interpolate, attention factor 1.
        let one = Scaling::yarn(1.0, 4096)
            .frequencies(64, 10_000.0, 0)
            .unwrap();
        for (a, b) in one.inv_freq.iter().zip(default_inv_freq(64, 10_000.0)) {
            assert_rel("yarn1", "inv_freq", *a, b);
        }
        assert_eq!(one.attention_factor, 1.0);
    }

    #[test]
    fn yarn_attention_factor_rules() {
        let with = |mscale: f64, mscale_all_dim: f64, attention_factor: Option<f64>| {
            Scaling::Yarn {
                factor: 40.0,
                original_max_position_embeddings: 4096,
                beta_fast: 32.0,
                beta_slow: 1.0,
                mscale,
                mscale_all_dim,
                attention_factor,
                truncate: true,
            }
            .frequencies(64, 10_000.0, 0)
            .unwrap()
            .attention_factor
        };
        let m = |m: f64| 0.1 * m * 40f64.ln() + 1.0;
        assert_eq!(with(0.707, 0.707, None), 1.0);
        assert_rel("yarn", "ratio", with(1.0, 0.707, None), m(1.0) / m(0.707));
        // Only one of the two given: HF falls back to get_mscale(factor).
        assert_rel("yarn", "mscale only", with(0.707, 0.0, None), m(1.0));
        assert_rel("yarn", "all_dim only", with(0.0, 0.707, None), m(1.0));
        assert_eq!(with(0.707, 0.707, Some(1.5)), 1.5);
    }

    #[test]
    fn llama3_bands() {
        let f = Scaling::llama3().frequencies(128, 500_000.0, 0).unwrap();
        let plain = default_inv_freq(128, 500_000.0);
        for (j, (g, p)) in f.inv_freq.iter().zip(&plain).enumerate() {
            let wavelen = 2.0 * PI / p;
            if wavelen < 8192.0 / 4.0 {
                assert_eq!(g, p, "pair {j} is high-frequency and must be kept");
            } else if wavelen > 8192.0 {
                assert_eq!(
                    *g,
                    p / 8.0,
                    "pair {j} is low-frequency and must be divided by 8"
                );
            } else {
                assert!(*g < *p && *g > p / 8.0, "pair {j} must lie between");
            }
        }
        assert_eq!(f.attention_factor, 1.0);
    }

    #[test]
    fn longrope_switches_factor_lists_after_the_original_length() {
        let s = Scaling::LongRope {
            short_factor: vec![1.0, 2.0],
            long_factor: vec![4.0, 8.0],
            original_max_position_embeddings: 4096,
            max_position_embeddings: 131_072,
            attention_factor: None,
        };
        let plain = default_inv_freq(4, 10_000.0);
        let short = s.frequencies(4, 10_000.0, 4096).unwrap();
        let long = s.frequencies(4, 10_000.0, 4097).unwrap();
        assert_rel("longrope", "short0", short.inv_freq[0], plain[0]);
        assert_rel("longrope", "short1", short.inv_freq[1] * 2.0, plain[1]);
        assert_rel("longrope", "long1", long.inv_freq[1] * 8.0, plain[1]);
        assert_eq!(
            s.frequencies(4, 10_000.0, 0).unwrap().inv_freq,
            short.inv_freq
        );
        let expected = (1.0 + 32f64.ln() / 4096f64.ln()).sqrt();
        assert_rel("longrope", "attention", short.attention_factor, expected);
        assert_eq!(short.attention_factor, long.attention_factor);
        // No stretch, no attention change; an explicit factor wins.
        let same = Scaling::LongRope {
            short_factor: vec![1.0],
            long_factor: vec![1.0],
            original_max_position_embeddings: 4096,
            max_position_embeddings: 4096,
            attention_factor: None,
        };
        assert_eq!(
            same.frequencies(2, 10_000.0, 0).unwrap().attention_factor,
            1.0
        );
        let given = Scaling::LongRope {
            short_factor: vec![1.0],
            long_factor: vec![1.0],
            original_max_position_embeddings: 4096,
            max_position_embeddings: 131_072,
            attention_factor: Some(1.25),
        };
        assert_eq!(
            given.frequencies(2, 10_000.0, 0).unwrap().attention_factor,
            1.25
        );
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        use FrequencyError as E;
        let ok = Scaling::Default;
        assert_eq!(
            ok.frequencies(0, 1e4, 0),
            Err(E::InvalidRotaryDim { rotary_dim: 0 })
        );
        assert_eq!(
            ok.frequencies(7, 1e4, 0),
            Err(E::InvalidRotaryDim { rotary_dim: 7 })
        );
        for base in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(
                matches!(ok.frequencies(8, base, 0), Err(E::InvalidBase { .. })),
                "{base}"
            );
        }
        for factor in [0.5, 0.0, -2.0, f64::NAN, f64::INFINITY] {
            let e = Scaling::Linear { factor }.frequencies(8, 1e4, 0);
            assert!(
                matches!(e, Err(E::InvalidFactor { name: "factor", .. })),
                "{factor}: {e:?}"
            );
            let e = Scaling::yarn(factor, 4096).frequencies(8, 1e4, 0);
            assert!(matches!(e, Err(E::InvalidFactor { .. })), "{factor}: {e:?}");
        }
        let e = Scaling::NtkAware { factor: 2.0 }.frequencies(2, 1e4, 0);
        assert_eq!(
            e,
            Err(E::RotaryDimTooSmall {
                scaling: "NTK-aware",
                rotary_dim: 2
            })
        );
        let dynamic = Scaling::DynamicNtk {
            factor: 2.0,
            original_max_position_embeddings: 2048,
        };
        assert!(matches!(
            dynamic.frequencies(2, 1e4, 1),
            Err(E::RotaryDimTooSmall { .. })
        ));
        let zero = Scaling::DynamicNtk {
            factor: 2.0,
            original_max_position_embeddings: 0,
        };
        assert!(matches!(
            zero.frequencies(8, 1e4, 1),
            Err(E::ZeroContextLength { .. })
        ));
        assert!(matches!(
            Scaling::yarn(4.0, 0).frequencies(8, 1e4, 0),
            Err(E::ZeroContextLength { .. })
        ));
        assert_eq!(
            Scaling::yarn(4.0, 4096).frequencies(8, 1.0, 0),
            Err(E::YarnBaseTooSmall { base: 1.0 })
        );

        let yarn = |beta_fast: f64, beta_slow: f64, mscale: f64, attention_factor: Option<f64>| {
            Scaling::Yarn {
                factor: 4.0,
                original_max_position_embeddings: 4096,
                beta_fast,
                beta_slow,
                mscale,
                mscale_all_dim: 0.0,
                attention_factor,
                truncate: true,
            }
        };
        assert!(matches!(
            yarn(1.0, 32.0, 0.0, None).validate(),
            Err(E::BetaFastBelowBetaSlow { .. })
        ));
        assert!(matches!(
            yarn(0.0, 0.0, 0.0, None).validate(),
            Err(E::InvalidParameter {
                name: "beta_fast",
                ..
            })
        ));
        assert!(matches!(
            yarn(32.0, 1.0, -1.0, None).validate(),
            Err(E::InvalidParameter { name: "mscale", .. })
        ));
        assert!(matches!(
            yarn(32.0, 1.0, 0.0, Some(0.0)).validate(),
            Err(E::InvalidParameter {
                name: "attention_factor",
                ..
            })
        ));
        // Equal betas are allowed (HF widens the ramp by 0.001).
        assert!(yarn(8.0, 8.0, 0.0, None).frequencies(64, 1e4, 0).is_ok());

        let llama = |low: f64, high: f64| Scaling::Llama3 {
            factor: 8.0,
            low_freq_factor: low,
            high_freq_factor: high,
            original_max_position_embeddings: 8192,
        };
        assert!(matches!(
            llama(4.0, 1.0).validate(),
            Err(E::LowFreqNotBelowHighFreq { .. })
        ));
        // Llama 4: equal factors, no blended band.
        assert!(llama(2.0, 2.0).validate().is_ok());
        assert!(matches!(
            llama(0.0, 4.0).validate(),
            Err(E::InvalidParameter {
                name: "low_freq_factor",
                ..
            })
        ));

        let lr = |short: Vec<f64>| Scaling::LongRope {
            short_factor: short,
            long_factor: vec![1.0; 4],
            original_max_position_embeddings: 4096,
            max_position_embeddings: 131_072,
            attention_factor: None,
        };
        assert_eq!(
            lr(vec![1.0; 3]).frequencies(8, 1e4, 0),
            Err(E::FactorListLength {
                which: "short_factor",
                len: 3,
                expected: 4,
                rotary_dim: 8
            })
        );
        assert_eq!(
            lr(vec![1.0, 1.0, f64::NAN, 1.0])
                .validate()
                .map_err(|e| e.to_string()),
            Err("LongRoPE short_factor[2] must be finite and greater than 0, got NaN".to_string())
        );
        assert!(matches!(
            lr(vec![1.0, 0.0, 1.0, 1.0]).validate(),
            Err(E::FactorListValue { index: 1, .. })
        ));
        // A LongRoPE trained at one position cannot stretch: ln(1) = 0 in the denominator.
        let one = Scaling::LongRope {
            short_factor: vec![1.0],
            long_factor: vec![1.0],
            original_max_position_embeddings: 1,
            max_position_embeddings: 8,
            attention_factor: None,
        };
        assert!(matches!(
            one.frequencies(2, 1e4, 0),
            Err(E::NonFiniteResult { .. })
        ));
        // Overflow is reported, not returned.
        let huge = Scaling::NtkAware { factor: 1e300 };
        assert!(matches!(
            huge.frequencies(4, 1e300, 0),
            Err(E::NonFiniteResult { .. })
        ));
    }

    #[test]
    fn error_messages_say_what_to_do() {
        let e = Scaling::Default
            .frequencies(7, 1e4, 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("even") && e.contains("7"), "{e}");
        let e = Scaling::Linear { factor: 0.5 }
            .frequencies(8, 1e4, 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 1") && e.contains("0.5"), "{e}");
    }

    #[cfg(feature = "hf-config")]
    mod hf_config {
        use super::super::*;
        use super::{GOLDEN, assert_rel};
        use serde_json::{Value, json};

        fn read(text: &str) -> (Scaling, f64, Option<f64>) {
            let v: Value = serde_json::from_str(text).expect("test JSON");
            Scaling::from_hf_config(&v).unwrap_or_else(|e| panic!("{e}"))
        }

        /// Every golden case that has an HF config reads back to the same scaling and base.
        #[test]
        fn golden_hf_configs_read_back_to_their_scaling() {
            let doc: Value = serde_json::from_str(GOLDEN).unwrap();
            let mut n = 0;
            for case in doc["cases"].as_array().unwrap() {
                if case["hf_config"].is_null() {
                    continue;
                }
                n += 1;
                let name = case["name"].as_str().unwrap();
                let (scaling, theta, _) = Scaling::from_hf_config(&case["hf_config"]).unwrap();
                assert_eq!(theta, case["base"].as_f64().unwrap(), "{name}");
                let r = case["rotary_dim"].as_u64().unwrap() as u32;
                let got = scaling
                    .frequencies(r, theta, case["seq_len"].as_u64().unwrap())
                    .unwrap();
                for (g, w) in got
                    .inv_freq
                    .iter()
                    .zip(case["inv_freq"].as_array().unwrap())
                {
                    assert_rel(name, "inv_freq", *g, w.as_f64().unwrap());
                }
                assert_rel(
                    name,
                    "attention",
                    got.attention_factor,
                    case["attention_factor"].as_f64().unwrap(),
                );
            }
            assert!(n >= 15, "{n}");
        }

        const LLAMA_3_1_8B: &str = r#"{
          "architectures": ["LlamaForCausalLM"],
          "attention_bias": false,
          "attention_dropout": 0.0,
          "bos_token_id": 128000,
          "eos_token_id": 128001,
          "hidden_act": "silu",
          "hidden_size": 4096,
          "initializer_range": 0.02,
          "intermediate_size": 14336,
          "max_position_embeddings": 131072,
          "mlp_bias": false,
          "model_type": "llama",
          "num_attention_heads": 32,
          "num_hidden_layers": 32,
          "num_key_value_heads": 8,
          "pretraining_tp": 1,
          "rms_norm_eps": 1e-05,
          "rope_scaling": {
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3"
          },
          "rope_theta": 500000.0,
          "tie_word_embeddings": false,
          "torch_dtype": "bfloat16",
          "transformers_version": "4.43.0.dev0",
          "use_cache": true,
          "vocab_size": 128256
        }"#;

        #[test]
        fn llama_3_1_8b() {
            let (s, theta, partial) = read(LLAMA_3_1_8B);
            assert_eq!(s, Scaling::llama3());
            assert_eq!(theta, 500_000.0);
            assert_eq!(partial, None);
        }

        /// The same model as transformers 5.x writes it: `rope_parameters`, theta inside.
        #[test]
        fn llama_3_1_8b_transformers_5() {
            let text = r#"{
              "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
              "rope_parameters": {
                "rope_theta": 500000.0, "rope_type": "llama3", "factor": 8.0,
                "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192
              }
            }"#;
            assert_eq!(read(text), (Scaling::llama3(), 500_000.0, None));
        }

        /// Qwen2-7B-Instruct's config.json with the YaRN block from its model card.
        const QWEN2_7B_YARN: &str = r#"{
          "architectures": ["Qwen2ForCausalLM"],
          "attention_dropout": 0.0,
          "bos_token_id": 151643,
          "eos_token_id": 151645,
          "hidden_act": "silu",
          "hidden_size": 3584,
          "initializer_range": 0.02,
          "intermediate_size": 18944,
          "max_position_embeddings": 32768,
          "max_window_layers": 28,
          "model_type": "qwen2",
          "num_attention_heads": 28,
          "num_hidden_layers": 28,
          "num_key_value_heads": 4,
          "rms_norm_eps": 1e-06,
          "rope_theta": 1000000.0,
          "sliding_window": 131072,
          "tie_word_embeddings": false,
          "torch_dtype": "bfloat16",
          "transformers_version": "4.41.2",
          "use_cache": true,
          "use_sliding_window": false,
          "vocab_size": 152064,
          "rope_scaling": {
            "factor": 4.0,
            "original_max_position_embeddings": 32768,
            "type": "yarn"
          }
        }"#;

        #[test]
        fn qwen2_yarn() {
            let (s, theta, _) = read(QWEN2_7B_YARN);
            assert_eq!(s, Scaling::yarn(4.0, 32_768));
            assert_eq!(theta, 1e6);
        }

        /// deepseek-ai/DeepSeek-V2-Lite config.json (the rope block is the same in V2).
        const DEEPSEEK_V2_LITE: &str = r#"{
          "architectures": ["DeepseekV2ForCausalLM"],
          "attention_bias": false,
          "attention_dropout": 0.0,
          "aux_loss_alpha": 0.001,
          "bos_token_id": 100000,
          "eos_token_id": 100001,
          "first_k_dense_replace": 1,
          "hidden_act": "silu",
          "hidden_size": 2048,
          "initializer_range": 0.02,
          "intermediate_size": 10944,
          "kv_lora_rank": 512,
          "max_position_embeddings": 163840,
          "model_type": "deepseek_v2",
          "moe_intermediate_size": 1408,
          "moe_layer_freq": 1,
          "n_group": 1,
          "n_routed_experts": 64,
          "n_shared_experts": 2,
          "norm_topk_prob": false,
          "num_attention_heads": 16,
          "num_experts_per_tok": 6,
          "num_hidden_layers": 27,
          "num_key_value_heads": 16,
          "q_lora_rank": null,
          "qk_nope_head_dim": 128,
          "qk_rope_head_dim": 64,
          "rms_norm_eps": 1e-06,
          "rope_scaling": {
            "beta_fast": 32,
            "beta_slow": 1,
            "factor": 40,
            "mscale": 0.707,
            "mscale_all_dim": 0.707,
            "original_max_position_embeddings": 4096,
            "type": "yarn"
          },
          "rope_theta": 10000,
          "routed_scaling_factor": 1.0,
          "scoring_func": "softmax",
          "seq_aux": true,
          "tie_word_embeddings": false,
          "topk_group": 1,
          "topk_method": "greedy",
          "torch_dtype": "bfloat16",
          "v_head_dim": 128,
          "vocab_size": 102400
        }"#;

        #[test]
        fn deepseek_v2_yarn() {
            let (s, theta, _) = read(DEEPSEEK_V2_LITE);
            let expected = Scaling::Yarn {
                factor: 40.0,
                original_max_position_embeddings: 4096,
                beta_fast: 32.0,
                beta_slow: 1.0,
                mscale: 0.707,
                mscale_all_dim: 0.707,
                attention_factor: None,
                truncate: true,
            };
            assert_eq!(s, expected);
            assert_eq!(theta, 10_000.0);
            assert_eq!(
                s.frequencies(64, theta, 163_840).unwrap().attention_factor,
                1.0
            );
        }

        /// Phi-3-mini-128k-instruct's rope-related keys (factor lists: see the provenance note
        /// in tests/data/rope_scaling_golden.py).
        fn phi3_mini_128k() -> Value {
            let doc: Value = serde_json::from_str(GOLDEN).unwrap();
            let case = doc["cases"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == "phi3_mini_128k_seq131072")
                .unwrap();
            let rope = &case["hf_config"]["rope_scaling"];
            json!({
                "architectures": ["Phi3ForCausalLM"],
                "hidden_size": 3072,
                "max_position_embeddings": 131072,
                "model_type": "phi3",
                "num_attention_heads": 32,
                "original_max_position_embeddings": 4096,
                "rope_scaling": {
                    "long_factor": rope["long_factor"],
                    "short_factor": rope["short_factor"],
                    "type": "longrope"
                },
                "rope_theta": 10000.0,
                "sliding_window": 262144
            })
        }

        #[test]
        fn phi3_longrope() {
            let cfg = phi3_mini_128k();
            let (s, theta, _) = Scaling::from_hf_config(&cfg).unwrap();
            let Scaling::LongRope {
                short_factor,
                long_factor,
                original_max_position_embeddings,
                max_position_embeddings,
                attention_factor,
            } = &s
            else {
                panic!("{s:?}");
            };
            assert_eq!((short_factor.len(), long_factor.len()), (48, 48));
            assert_eq!(long_factor[0], 1.0700000524520874);
            assert_eq!(
                (*original_max_position_embeddings, *max_position_embeddings),
                (4096, 131_072)
            );
            // HF computes it once from max / original: sqrt(1 + ln 32 / ln 4096).
            assert_eq!(*attention_factor, Some(1.190_238_071_423_808_3));
            assert_eq!(theta, 10_000.0);
            // head_dim 96 has 48 pairs; 128 would not fit the lists.
            assert!(s.frequencies(96, theta, 131_072).is_ok());
            assert!(matches!(
                s.frequencies(128, theta, 0),
                Err(FrequencyError::FactorListLength { .. })
            ));
        }

        #[test]
        fn phi3_top_level_original_wins_and_su_is_longrope() {
            let mut cfg = phi3_mini_128k();
            cfg["rope_scaling"]["type"] = json!("su");
            cfg["rope_scaling"]["original_max_position_embeddings"] = json!(2048);
            let (s, _, _) = Scaling::from_hf_config(&cfg).unwrap();
            assert!(matches!(
                s,
                Scaling::LongRope {
                    original_max_position_embeddings: 4096,
                    ..
                }
            ));
        }

        #[test]
        fn longrope_explicit_factor_sets_the_attention_factor() {
            let mut cfg = phi3_mini_128k();
            cfg["rope_scaling"]["factor"] = json!(16.0);
            let (s, _, _) = Scaling::from_hf_config(&cfg).unwrap();
            let expected = (1.0 + 16f64.ln() / 4096f64.ln()).sqrt();
            match s {
                Scaling::LongRope {
                    attention_factor: Some(a),
                    ..
                } => assert_rel("phi3", "attention", a, expected),
                other => panic!("{other:?}"),
            }
            cfg["rope_scaling"]["attention_factor"] = json!(1.5);
            let (s, _, _) = Scaling::from_hf_config(&cfg).unwrap();
            assert!(matches!(
                s,
                Scaling::LongRope {
                    attention_factor: Some(1.5),
                    ..
                }
            ));
        }

        #[test]
        fn defaults_and_partial_rotary() {
            // No rope keys at all: default RoPE, theta 10000.
            assert_eq!(
                read(r#"{"hidden_size": 64}"#),
                (Scaling::Default, 10_000.0, None)
            );
            assert_eq!(
                read(r#"{"rope_scaling": null, "rope_theta": 5e5}"#),
                (Scaling::Default, 5e5, None)
            );
            // GPT-NeoX / Phi style partial rotary at the top level, and inside rope_parameters.
            assert_eq!(read(r#"{"partial_rotary_factor": 0.4}"#).2, Some(0.4));
            let v5 = r#"{"rope_theta": 1e4, "rope_parameters":
                        {"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": 0.25}}"#;
            assert_eq!(read(v5), (Scaling::Default, 1e6, Some(0.25)));
            // Both given: the rope parameters' value wins (HF's setdefault; checked with
            // transformers 5.24 on `phi`, see tests/data/hf/README.md).
            let both = r#"{"partial_rotary_factor": 0.5, "rope_parameters":
                        {"rope_type": "default", "partial_rotary_factor": 0.25}}"#;
            assert_eq!(read(both).2, Some(0.25));
            // An empty rope_scaling falls through to rope_parameters, as `a or b` does in HF.
            let both = r#"{"rope_scaling": {}, "rope_parameters": {"rope_type": "linear", "factor": 2.0}}"#;
            assert_eq!(read(both).0, Scaling::Linear { factor: 2.0 });
        }

        #[test]
        fn dynamic_takes_max_position_embeddings() {
            let text = r#"{"max_position_embeddings": 4096,
                           "rope_scaling": {"type": "dynamic", "factor": 2.0,
                                            "original_max_position_embeddings": 1024}}"#;
            let expected = Scaling::DynamicNtk {
                factor: 2.0,
                original_max_position_embeddings: 4096,
            };
            assert_eq!(read(text).0, expected);
        }

        #[test]
        fn yarn_defaults_follow_hf() {
            // A null factor: max / original (no key at all is a load error in HF 5.x). Null /
            // zero betas: 32 / 1. Null truncate: false.
            let text = r#"{"max_position_embeddings": 131072, "rope_scaling": {
                "rope_type": "yarn", "original_max_position_embeddings": 4096, "factor": null,
                "beta_fast": 0, "beta_slow": null, "truncate": null}}"#;
            let expected = Scaling::Yarn {
                factor: 32.0,
                original_max_position_embeddings: 4096,
                beta_fast: 32.0,
                beta_slow: 1.0,
                mscale: 0.0,
                mscale_all_dim: 0.0,
                attention_factor: None,
                truncate: false,
            };
            assert_eq!(read(text).0, expected);
            // No original anywhere: max_position_embeddings (HF's standardization).
            let text = r#"{"max_position_embeddings": 8192,
                           "rope_parameters": {"rope_type": "yarn", "factor": 2.0}}"#;
            assert_eq!(read(text).0, Scaling::yarn(2.0, 8192));
        }

        #[test]
        fn bad_configs_are_errors() {
            let err = |text: &str| {
                let v: Value = serde_json::from_str(text).unwrap();
                Scaling::from_hf_config(&v).unwrap_err()
            };
            assert_eq!(
                err("[1, 2]"),
                FrequencyError::ConfigNotObject { found: "an array" }
            );
            assert!(matches!(
                err(r#"{"rope_scaling": {"rope_type": "linear"}}"#),
                FrequencyError::MissingConfigKey { key: "factor", .. }
            ));
            assert!(matches!(
                err(r#"{"rope_scaling": {"type": "dynamic", "factor": 2.0}}"#),
                FrequencyError::MissingConfigKey {
                    key: "max_position_embeddings",
                    ..
                }
            ));
            assert!(matches!(
                err(
                    r#"{"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0}}"#
                ),
                FrequencyError::MissingConfigKey {
                    key: "original_max_position_embeddings",
                    ..
                }
            ));
            assert!(matches!(
                err(r#"{"rope_scaling": {"rope_type": "linear", "factor": "4"}}"#),
                FrequencyError::InvalidConfigValue { .. }
            ));
            assert!(matches!(
                err(r#"{"rope_scaling": {"rope_type": "linear", "factor": 0.5}}"#),
                FrequencyError::InvalidFactor { .. }
            ));
            assert!(matches!(
                err(r#"{"rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}"#),
                FrequencyError::UnsupportedRopeType { .. }
            ));
            assert!(matches!(
                err(
                    r#"{"max_position_embeddings": 8, "rope_scaling": {"type": "longrope",
                      "short_factor": [1.0, "x"], "long_factor": [1.0, 1.0]}}"#
                ),
                FrequencyError::InvalidConfigValue { .. }
            ));
            // Gemma 3 style: one parameter set per layer type.
            let gemma = r#"{"rope_parameters": {
                "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}}"#;
            assert!(matches!(
                err(gemma),
                FrequencyError::PerLayerRopeParameters { .. }
            ));
            let e = err(gemma).to_string();
            assert!(e.contains("full_attention"), "{e}");
        }
    }
}
