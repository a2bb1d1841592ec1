//! The checks of a scaling's parameters: on their own ([`Scaling::validate`]) and for a
//! rotary dimension and base ([`Scaling::check_for`]), without computing anything.

use super::{Llama3, LongRope, Scaling, Yarn};
use crate::error::FrequencyError;

impl Scaling {
    /// Every check [`Scaling::frequencies`] makes for rotary dim `rotary_dim` and `base`,
    /// without computing (or allocating) anything: what a call on an empty view still
    /// validates.
    pub fn check_for(&self, rotary_dim: u64, base: f64) -> Result<(), FrequencyError> {
        let r32 = u32::try_from(rotary_dim).unwrap_or(u32::MAX);
        if rotary_dim == 0
            || !rotary_dim.is_multiple_of(2)
            || rotary_dim > crate::RopeSpec::MAX_HEAD_DIM
        {
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
            Scaling::Yarn(_) if base <= 1.0 => Err(FrequencyError::YarnBaseTooSmall { base }),
            Scaling::LongRope(LongRope {
                short_factor,
                long_factor,
                ..
            }) => {
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
                check_share(s, "partial_rotary_factor", *partial_rotary_factor)
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
            Scaling::Yarn(y) => y.validate(),
            Scaling::Llama3(Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_position_embeddings,
            }) => {
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
            Scaling::LongRope(l) => l.validate(),
        }
    }
}

impl Yarn {
    fn validate(&self) -> Result<(), FrequencyError> {
        let s = "YaRN";
        check_factor(s, "factor", self.factor)?;
        check_context(
            s,
            "original_max_position_embeddings",
            self.original_max_position_embeddings,
        )?;
        check_positive(s, "beta_fast", self.beta_fast)?;
        check_positive(s, "beta_slow", self.beta_slow)?;
        if self.beta_fast < self.beta_slow {
            return Err(FrequencyError::BetaFastBelowBetaSlow {
                beta_fast: self.beta_fast,
                beta_slow: self.beta_slow,
            });
        }
        check_non_negative(s, "mscale", self.mscale)?;
        check_non_negative(s, "mscale_all_dim", self.mscale_all_dim)?;
        if let Some(a) = self.attention_factor {
            check_positive(s, "attention_factor", a)?;
        }
        Ok(())
    }
}

impl LongRope {
    fn validate(&self) -> Result<(), FrequencyError> {
        let s = "LongRoPE";
        check_factor_list("short_factor", &self.short_factor)?;
        check_factor_list("long_factor", &self.long_factor)?;
        check_context(
            s,
            "original_max_position_embeddings",
            self.original_max_position_embeddings,
        )?;
        check_context(s, "max_position_embeddings", self.max_position_embeddings)?;
        if let Some(a) = self.attention_factor {
            check_positive(s, "attention_factor", a)?;
        }
        Ok(())
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

/// A real parameter within a range, or [`FrequencyError::InvalidParameter`] saying which.
fn check_range(
    scaling: &'static str,
    name: &'static str,
    value: f64,
    (ok, need): (fn(f64) -> bool, &'static str),
) -> Result<(), FrequencyError> {
    if value.is_finite() && ok(value) {
        Ok(())
    } else {
        Err(FrequencyError::InvalidParameter {
            scaling,
            name,
            value,
            need,
        })
    }
}

/// A share in `(0, 1]`.
const SHARE: (fn(f64) -> bool, &str) = (|v| v > 0.0 && v <= 1.0, "in (0, 1]");
/// Greater than 0.
const POSITIVE: (fn(f64) -> bool, &str) = (|v| v > 0.0, "finite and greater than 0");
/// At least 0, where 0 means "not given".
const NON_NEGATIVE: (fn(f64) -> bool, &str) =
    (|v| v >= 0.0, "finite and at least 0 (0 means not given)");

fn check_share(scaling: &'static str, name: &'static str, v: f64) -> Result<(), FrequencyError> {
    check_range(scaling, name, v, SHARE)
}

fn check_positive(scaling: &'static str, name: &'static str, v: f64) -> Result<(), FrequencyError> {
    check_range(scaling, name, v, POSITIVE)
}

fn check_non_negative(
    scaling: &'static str,
    name: &'static str,
    v: f64,
) -> Result<(), FrequencyError> {
    check_range(scaling, name, v, NON_NEGATIVE)
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
