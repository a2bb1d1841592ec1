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

mod checks;
pub(crate) mod error;

use crate::dd::Dd;
pub use error::FrequencyError;

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
    Yarn(Yarn),
    /// Llama 3.1 (HF `"llama3"`): wavelengths above `orig / low_freq_factor` are divided by
    /// `factor`, those below `orig / high_freq_factor` are kept, and the band between is
    /// interpolated smoothly.
    Llama3(Llama3),
    /// LongRoPE (HF `"longrope"`, legacy Phi-3 `"su"`): one rescale factor per pair,
    /// `f_j = base^(-2j/r) / ext_j`, with `ext = long_factor` when
    /// `seq_len > original_max_position_embeddings` and `short_factor` otherwise.
    LongRope(LongRope),
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

/// The parameters of [`Scaling::Yarn`].
#[derive(Clone, Debug, PartialEq)]
pub struct Yarn {
    /// Context extension factor, finite and `>= 1`.
    pub factor: f64,
    /// Pretraining context length; the correction range is computed from it.
    pub original_max_position_embeddings: u64,
    /// Rotations at which the ramp starts (extrapolation only above); HF default 32.
    pub beta_fast: f64,
    /// Rotations at which the ramp ends (interpolation only below); HF default 1.
    pub beta_slow: f64,
    /// `mscale` of DeepSeek-style configs; `0.0` means "not given" (HF treats a missing and
    /// a zero value alike). Finite and `>= 0`.
    pub mscale: f64,
    /// `mscale_all_dim` of DeepSeek-style configs; `0.0` means "not given". When both this
    /// and `mscale` are non-zero the attention factor is
    /// `get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)`, otherwise
    /// `get_mscale(factor) = 0.1 ln(factor) + 1`. Finite and `>= 0`.
    pub mscale_all_dim: f64,
    /// An explicit attention factor, which replaces the computed one. Finite and `> 0`.
    pub attention_factor: Option<f64>,
    /// Round the correction range outwards to whole dimensions (HF default `true`;
    /// gpt-oss sets `false`).
    pub truncate: bool,
}

/// The parameters of [`Scaling::Llama3`].
#[derive(Clone, Debug, PartialEq)]
pub struct Llama3 {
    /// Scaling factor of the low frequencies, finite and `>= 1` (8 for Llama 3.1).
    pub factor: f64,
    /// Finite and `> 0` (1 for Llama 3.1).
    pub low_freq_factor: f64,
    /// Finite and greater than `low_freq_factor` (4 for Llama 3.1).
    pub high_freq_factor: f64,
    /// Pretraining context length (8192 for Llama 3.1).
    pub original_max_position_embeddings: u64,
}

/// The parameters of [`Scaling::LongRope`].
#[derive(Clone, Debug, PartialEq)]
pub struct LongRope {
    /// Per-pair factors for short contexts; length `r/2`, finite and `> 0`.
    pub short_factor: Vec<f64>,
    /// Per-pair factors for long contexts; length `r/2`, finite and `> 0`.
    pub long_factor: Vec<f64>,
    /// Pretraining context length (4096 for Phi-3).
    pub original_max_position_embeddings: u64,
    /// Extended context length (131072 for Phi-3 128k); with the original length it
    /// gives the default attention factor.
    pub max_position_embeddings: u64,
    /// An explicit attention factor; otherwise `sqrt(1 + ln(s) / ln(orig))` with
    /// `s = max / orig`, or 1 when `s <= 1`. Finite and `> 0`.
    pub attention_factor: Option<f64>,
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

/// The unscaled frequencies base^(-2j/r), j in 0..r/2, computed exactly as `base.powf(-(2.0 * j as f64) / r as f64)`.
///
/// Checks only the size (at most [`crate::RopeSpec::MAX_HEAD_DIM`], so that nothing huge is
/// allocated): an odd `rotary_dim` gives `rotary_dim / 2` (rounded down) entries, zero gives
/// none, and a non-positive or non-finite base gives what `powf` gives. Use
/// [`Scaling::frequencies`] for checked input.
pub fn default_inv_freq(rotary_dim: u32, base: f64) -> Result<Vec<f64>, FrequencyError> {
    if u64::from(rotary_dim) > crate::RopeSpec::MAX_HEAD_DIM {
        return Err(FrequencyError::InvalidRotaryDim { rotary_dim });
    }
    Ok(default_inv_freq_dd(rotary_dim, base)
        .into_iter()
        .map(|f| f.hi)
        .collect())
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

impl Scaling {
    /// YaRN with HF's defaults for everything but the factor and the original context length:
    /// `beta_fast` 32, `beta_slow` 1, no `mscale` / `mscale_all_dim` (attention factor
    /// `0.1 ln(factor) + 1`), no explicit attention factor, `truncate` true.
    pub fn yarn(factor: f64, original_max_position_embeddings: u64) -> Self {
        Scaling::Yarn(Yarn {
            factor,
            original_max_position_embeddings,
            beta_fast: 32.0,
            beta_slow: 1.0,
            mscale: 0.0,
            mscale_all_dim: 0.0,
            attention_factor: None,
            truncate: true,
        })
    }

    /// Llama 3.1's scaling: factor 8, low_freq_factor 1, high_freq_factor 4, original 8192.
    pub fn llama3() -> Self {
        Scaling::Llama3(Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 8192,
        })
    }

    /// Whether the frequencies depend on the sequence length (dynamic NTK, LongRoPE).
    pub fn needs_seq_len(&self) -> bool {
        matches!(self, Scaling::DynamicNtk { .. } | Scaling::LongRope(_))
    }

    /// Short name of the scaling type, as used in error messages.
    pub fn name(&self) -> &'static str {
        match self {
            Scaling::Default => "default",
            Scaling::Linear { .. } => "linear",
            Scaling::DynamicNtk { .. } => "dynamic NTK",
            Scaling::NtkAware { .. } => "NTK-aware",
            Scaling::Yarn(_) => "YaRN",
            Scaling::Llama3(_) => "Llama 3",
            Scaling::LongRope(_) => "LongRoPE",
            Scaling::Proportional { .. } => "proportional",
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
        self.check_for(u64::from(rotary_dim), base)?;
        let r = f64::from(rotary_dim);
        let non_finite = FrequencyError::NonFiniteResult {
            scaling: self.name(),
            rotary_dim,
            base,
        };
        // The base of a power-of-base scaling, which must stay finite.
        let powered = |b: f64| {
            if b.is_finite() {
                Ok(default_inv_freq_dd(rotary_dim, b))
            } else {
                Err(non_finite.clone())
            }
        };
        let out = match self {
            Scaling::Default => unit(default_inv_freq_dd(rotary_dim, base)),
            Scaling::Linear { factor } => {
                unit(divided(default_inv_freq_dd(rotary_dim, base), *factor))
            }
            Scaling::Proportional {
                partial_rotary_factor,
                factor,
            } => {
                // HF: int(partial * head // 2) pairs rotate, the others not at all.
                let angles = (partial_rotary_factor * r / 2.0).floor() as usize;
                let mut f = divided(default_inv_freq_dd(rotary_dim, base), *factor);
                f.iter_mut()
                    .skip(angles)
                    .for_each(|x| *x = Dd::from_f64(0.0));
                unit(f)
            }
            Scaling::NtkAware { factor } => unit(powered(base * factor.powf(r / (r - 2.0)))?),
            Scaling::DynamicNtk {
                factor,
                original_max_position_embeddings: orig,
            } if seq_len > *orig => {
                let stretch = factor * seq_len as f64 / *orig as f64 - (factor - 1.0);
                unit(powered(base * stretch.powf(r / (r - 2.0)))?)
            }
            Scaling::DynamicNtk { .. } => unit(default_inv_freq_dd(rotary_dim, base)),
            Scaling::Yarn(y) => y.frequencies(rotary_dim, base),
            Scaling::Llama3(l) => l.frequencies(rotary_dim, base),
            Scaling::LongRope(l) => l.frequencies(rotary_dim, base, seq_len),
        };
        let finite = out.inv_freq.iter().all(|f| f.is_finite() && *f >= 0.0);
        if finite && out.attention_factor.is_finite() && out.attention_factor > 0.0 {
            Ok(out)
        } else {
            Err(non_finite)
        }
    }
}

impl Yarn {
    /// YaRN (checked parameters): the ramp between extrapolated and interpolated
    /// frequencies over HF's correction range, and the attention factor.
    fn frequencies(&self, rotary_dim: u32, base: f64) -> Frequencies {
        let Yarn {
            factor,
            original_max_position_embeddings,
            beta_fast,
            beta_slow,
            mscale,
            mscale_all_dim,
            attention_factor,
            truncate,
        } = self;
        let r = f64::from(rotary_dim);
        let orig = *original_max_position_embeddings as f64;
        // The dimension (2j) whose wavelength makes `rotations` turns over `orig` positions:
        // r * ln(orig / (2 pi rotations)) / (2 ln base).
        let dim_at = |rotations: f64| r * (orig / (rotations * 2.0 * PI)).ln() / (2.0 * base.ln());
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
        let inv_freq: Vec<f64> = (0..rotary_dim / 2)
            .map(|j| {
                let pos_freq = base.powf(2.0 * f64::from(j) / r);
                let extrapolated = 1.0 / pos_freq;
                let interpolated = 1.0 / (factor * pos_freq);
                let ramp = ((f64::from(j) - low) / (high - low)).clamp(0.0, 1.0);
                let extrapolation_factor = 1.0 - ramp;
                interpolated * (1.0 - extrapolation_factor) + extrapolated * extrapolation_factor
            })
            .collect();
        let attention_factor = match attention_factor {
            Some(a) => *a,
            None if *mscale != 0.0 && *mscale_all_dim != 0.0 => {
                yarn_get_mscale(*factor, *mscale) / yarn_get_mscale(*factor, *mscale_all_dim)
            }
            None => yarn_get_mscale(*factor, 1.0),
        };
        Frequencies {
            inv_freq_lo: vec![0.0; inv_freq.len()],
            inv_freq,
            attention_factor,
        }
    }
}

impl Llama3 {
    /// Llama 3 (checked parameters): wavelength bands, in HF's order.
    fn frequencies(&self, rotary_dim: u32, base: f64) -> Frequencies {
        let Llama3 {
            factor,
            low_freq_factor,
            high_freq_factor,
            original_max_position_embeddings,
        } = self;
        let orig = *original_max_position_embeddings as f64;
        let low_freq_wavelen = orig / low_freq_factor;
        let high_freq_wavelen = orig / high_freq_factor;
        let inv_freq = default_inv_freq_dd(rotary_dim, base)
            .into_iter()
            .map(|fd| {
                let f = fd.hi;
                let wavelen = 2.0 * PI / f;
                if wavelen > low_freq_wavelen {
                    fd.div(Dd::from_f64(*factor))
                } else if wavelen < high_freq_wavelen {
                    fd
                } else {
                    // The medium band; empty when the two factors are equal (Llama 4).
                    let smooth =
                        (orig / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
                    let smooth = if smooth.is_finite() { smooth } else { 0.0 };
                    Dd::from_f64((1.0 - smooth) * f / factor + smooth * f)
                }
            })
            .collect();
        unit(inv_freq)
    }
}

impl LongRope {
    /// LongRoPE (checked parameters, lists of r/2 factors): the long factors past the
    /// original length, and the attention factor.
    fn frequencies(&self, rotary_dim: u32, base: f64, seq_len: u64) -> Frequencies {
        let LongRope {
            short_factor,
            long_factor,
            original_max_position_embeddings: orig,
            max_position_embeddings,
            attention_factor,
        } = self;
        let r = f64::from(rotary_dim);
        let ext = if seq_len > *orig {
            long_factor
        } else {
            short_factor
        };
        let inv_freq: Vec<f64> = ext
            .iter()
            .enumerate()
            .map(|(j, e)| 1.0 / (e * base.powf(2.0 * j as f64 / r)))
            .collect();
        let attention_factor = match attention_factor {
            Some(a) => *a,
            None => {
                longrope_attention_factor(*max_position_embeddings as f64 / *orig as f64, *orig)
            }
        };
        Frequencies {
            inv_freq_lo: vec![0.0; inv_freq.len()],
            inv_freq,
            attention_factor,
        }
    }
}

/// Frequencies with no attention factor.
fn unit(f: Vec<Dd>) -> Frequencies {
    let (inv_freq, inv_freq_lo) = split(f);
    Frequencies {
        inv_freq,
        inv_freq_lo,
        attention_factor: 1.0,
    }
}

/// Each frequency divided by `factor`, in double-double.
fn divided(f: Vec<Dd>, factor: f64) -> Vec<Dd> {
    f.into_iter().map(|x| x.div(Dd::from_f64(factor))).collect()
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
