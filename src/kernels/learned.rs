//! Host side of a learned table (`RopeSpec::learned`): its magnitudes as the pass's
//! frequencies, its signs and whole revolutions as their third words, and the calls it
//! takes.

use super::input::MAX_WHOLE_REVOLUTIONS;
use crate::angle::check_frequencies;
use crate::dd::Dd;
use crate::error::{Error, Result};
use crate::tensor::TensorView;
use crate::{FrequencyUnit, LearnedFrequencies};

/// The table's magnitudes in radians a position, checked (their signs go beside them, see
/// [`words`]); the attention factor is 1.
pub(super) fn frequencies(t: &LearnedFrequencies, unit: FrequencyUnit) -> Result<Vec<Dd>> {
    let unit = match unit {
        FrequencyUnit::Radians => Dd::from_f64(1.0),
        FrequencyUnit::Revolutions => crate::dd::TWO_PI,
    };
    let (hi, lo): (Vec<f64>, Vec<f64>) = t
        .values
        .iter()
        .map(|v| {
            let f = unit.mul(Dd::from_f64(v.abs()));
            (f.hi, f.lo)
        })
        .unzip();
    check_frequencies(&hi, &lo)
}

/// The third frequency word of each entry of a learned table: its sign, and at f32
/// positions its whole revolutions (`sign | W << 1`).
pub(super) fn words(values: &[f64], inv_freq: &[Dd], float: bool) -> Result<Vec<u32>> {
    values
        .iter()
        .zip(inv_freq)
        .map(|(&v, &f)| {
            let whole = match float {
                true => crate::angle::whole_revolutions(f)
                    .filter(|&w| w <= MAX_WHOLE_REVOLUTIONS)
                    .ok_or(Error::InvalidParameter {
                        what: "learned frequency with f32 positions",
                        value: v,
                        need: "below 2 pi 2^30 radians a position in magnitude",
                    })?,
                false => 0,
            };
            Ok(u32::from(v < 0.0) | whole << 1)
        })
        .collect()
}

/// A learned table of more than one head needs tensors (the call's, and its K) of its heads,
/// and no cos/sin cache (`cached`).
pub(super) fn check_heads(
    heads: u64,
    views: [Option<&TensorView<'_>>; 2],
    cached: bool,
) -> Result<()> {
    for v in views.into_iter().flatten() {
        if heads > 1 && v.layout.shape[1] != heads {
            return Err(Error::ShapeMismatch {
                what: "a learned table's heads must be the tensors' (or one head for all)",
                a: v.layout.shape,
                b: [heads, heads, heads, heads],
            });
        }
    }
    if cached {
        return Err(Error::Unsupported(
            "a cos/sin cache replaces the frequencies: a learned table takes none",
        ));
    }
    Ok(())
}
