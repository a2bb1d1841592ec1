//! A caller's dense frequency table (learned frequencies): the angle of pair `j` of head `h`
//! at a token is `sum over axes a of pos_a * F[a, h, j]`.

use crate::error::{Error, Result};

/// A dense table of frequencies `[axes, heads, pairs]`, row-major, in the spec's unit
/// ([`crate::FrequencyUnit`]; radians a position by default), any sign: pair `j` of head `h`
/// turns by `sum_a pos_a F[a, h, j]` (diffusers' Mochi, `MochiRoPE`: its checkpoint's
/// `pos_frequencies` `[3, heads, head_dim / 2]` over the positions `(t, h, w)`; timm's
/// RoPE-Mixed). One head (`heads` 1) serves every head; else a tensor's heads must be the
/// table's. One axis takes 1-D positions; two to four take position axes (`[3, batch, seq]`,
/// or `[4, batch, seq]` for four), axis `a` from plane `a`.
#[derive(Clone, Debug, PartialEq)]
pub struct LearnedFrequencies {
    /// Position axes (1 to 4).
    pub axes: u64,
    /// Heads (1, or the tensors' heads).
    pub heads: u64,
    /// `axes * heads * pairs` values, row-major.
    pub values: Vec<f64>,
}

impl LearnedFrequencies {
    /// A table of `axes` and `heads` from `values` (f32 or f64 weights widen exactly).
    pub fn new(axes: u64, heads: u64, values: Vec<f64>) -> Self {
        Self {
            axes,
            heads,
            values,
        }
    }

    /// The position planes the table reads: 1 (1-D positions), 3, or 4.
    pub fn planes(&self) -> u64 {
        match self.axes {
            0 | 1 => 1,
            2 | 3 => 3,
            _ => 4,
        }
    }

    /// Checks the table against `pairs` rotated pairs: 1 to 4 axes, at least one head,
    /// `axes * heads * pairs` finite values whose magnitude the kernels reduce exactly.
    pub(crate) fn check(&self, pairs: u64) -> Result<()> {
        let need = self
            .axes
            .checked_mul(self.heads)
            .and_then(|n| n.checked_mul(pairs));
        if !(1..=4).contains(&self.axes)
            || self.heads == 0
            || need != Some(self.values.len() as u64)
        {
            return Err(Error::InvalidLearnedTable {
                axes: self.axes,
                heads: self.heads,
                pairs,
                values: self.values.len() as u64,
            });
        }
        match self
            .values
            .iter()
            .find(|v| !v.is_finite() || v.abs() > crate::angle::MAX_FREQUENCY)
        {
            Some(&value) => Err(Error::InvalidParameter {
                what: "learned frequency",
                value,
                need: "finite and at most 2^40 in magnitude",
            }),
            None => Ok(()),
        }
    }
}
