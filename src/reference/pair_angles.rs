//! The sine and cosine each pair of a RoPE row turns by, as the reference computes them:
//! from the frequencies (exact angles), a learned table, or a cos/sin cache, averaged over
//! the position sets of a pooled spec.

use super::{HostCache, sincos_at, sincos_exact, sincos_turns_at};
use crate::positions::HostPositions;
use crate::spec::RopeSpec;

/// What the angles of a call depend on.
pub(super) struct PairAngles<'a> {
    pub spec: &'a RopeSpec,
    pub positions: HostPositions<'a>,
    pub cache: Option<&'a HostCache<'a>>,
    /// Each pair's frequency `(hi, lo)` in the spec's unit, and the attention factor.
    pub freqs: &'a [(f64, f64)],
    pub factor: f64,
    /// Each pair's position axis.
    pub axes: &'a [u32],
    /// Batch rows and tokens of the view.
    pub nb: u64,
    pub ns: u64,
}

impl PairAngles<'_> {
    /// `(sin, cos)` of pair `j` of head `h` of token `(b, s)`: the mean over the spec's
    /// position sets (one set unless pooled), the inverse's sign and bf16 rounding applied.
    pub fn sincos(&self, j: usize, h: u64, b: u64, s: u64) -> (f64, f64) {
        let pool = self.spec.pool.max(1);
        let planes = self.spec.mrope.map_or(1, |m| m.planes());
        let (mut sin, mut cos) = (0.0, 0.0);
        for set in 0..u64::from(pool) {
            let (s1, c1) = self.at(j, h, b, s, set * planes);
            (sin, cos) = (sin + s1, cos + c1);
        }
        let (sin, cos) = (sin / f64::from(pool), cos / f64::from(pool));
        let sin = if self.spec.inverse { -sin } else { sin };
        match self.spec.cos_sin_bf16 {
            true => (super::bf16_round(sin), super::bf16_round(cos)),
            false => (sin, cos),
        }
    }

    /// `(sin, cos)` times the attention factor at the positions of planes `plane0..`.
    fn at(&self, j: usize, h: u64, b: u64, s: u64, plane0: u64) -> (f64, f64) {
        let (nb, ns, positions) = (self.nb, self.ns, &self.positions);
        let (f, f_lo) = self.freqs[j];
        let axis = plane0 + u64::from(self.axes[j]);
        let value = positions
            .value(nb, ns, b, s, axis)
            .expect("host positions hold every position of the view");
        let p = positions.position(nb, ns, b, s, axis).unwrap_or(0);
        if let (Some(t), None) = (&self.spec.learned, self.cache) {
            return learned_sincos(t, self.spec, j, h, |a| positions.value(nb, ns, b, s, a));
        }
        let float = matches!(
            positions,
            crate::Positions::Float(_) | crate::Positions::FloatAxes(_)
        );
        let (sin, cos) = match self.cache {
            // Revolutions per position, reduced in revolutions.
            None if self.spec.frequency_unit == crate::FrequencyUnit::Revolutions => {
                sincos_turns_at(value, f, f_lo)
            }
            // f32 positions: the angle of the f32 value itself.
            None if float => sincos_at(value, f, f_lo),
            None => sincos_exact(p, f, f_lo),
            Some(c) => {
                assert!(u64::from(p) < c.max_pos, "position {p} outside the cache");
                let row = (u64::from(p) * c.row_stride) as usize + j;
                return (
                    f64::from(c.values[row + c.sin_offset as usize]),
                    f64::from(c.values[row + c.cos_offset as usize]),
                );
            }
        };
        (sin * self.factor, cos * self.factor)
    }
}

/// The sine and cosine of pair `j` of head `h` under a learned table: the sum over its axes
/// of `pos_a F[a, h, j]` (head 0 for a one-head table), each term exact, combined as unit
/// complex numbers.
fn learned_sincos(
    t: &crate::LearnedFrequencies,
    spec: &RopeSpec,
    j: usize,
    h: u64,
    value: impl Fn(u64) -> Option<f64>,
) -> (f64, f64) {
    let pairs = t.values.len() / (t.axes * t.heads) as usize;
    let head = if t.heads == 1 { 0 } else { h as usize };
    let (mut sin, mut cos) = (0.0f64, 1.0f64);
    for a in 0..t.axes {
        let f = t.values[(a as usize * t.heads as usize + head) * pairs + j];
        let p = value(a).expect("host positions hold every position of the view");
        let (s, c) = match spec.frequency_unit {
            crate::FrequencyUnit::Radians => sincos_at(p, f, 0.0),
            crate::FrequencyUnit::Revolutions => sincos_turns_at(p, f, 0.0),
        };
        (sin, cos) = (sin * c + cos * s, cos * c - sin * s);
    }
    (sin, cos)
}
