//! Cos and sin tables laid out for the other pair layout ([`RopeSpec::table_layout`]): each
//! lane turns by the angle of its place in such a table.

use super::{OutputOrder, PairLayout, RopeSpec};
use crate::error::{Error, Result};

impl RopeSpec {
    /// Cos and sin tables laid out for `layout` (see [`RopeSpec::table_layout`]); the pairs'
    /// own layout is a plain rotation.
    pub fn table_layout(mut self, layout: PairLayout) -> Self {
        self.table_layout = Some(layout);
        self
    }

    /// Whether a lane's angle is not its pair's: a table laid out for the other layout.
    pub fn lane_angles(&self) -> bool {
        self.table_layout.is_some_and(|t| t != self.pair_layout)
    }

    /// The pair whose angle lane `lane` (of rotated lanes `r` wide) takes: its own pair's,
    /// or, for a table laid out for the other layout, the pair of its place in that table,
    /// within its block of [`RopeSpec::pair_blocks`] (`2 n` lanes, `n` pairs: lane `l` of a
    /// block takes pair `l / 2` of an interleaved table, `l mod n` of a half-split one).
    pub fn lane_angle(&self, r: u64, lane: u64) -> u64 {
        let n = ((r / 2) / self.pair_blocks.max(1)).max(1);
        let (block, l) = (lane / (2 * n), lane % (2 * n));
        let table = self.table_layout.unwrap_or(self.pair_layout);
        let own = match table {
            PairLayout::Interleaved => l / 2,
            PairLayout::HalfSplit => l % n,
        };
        block * n + own
    }

    /// For each pair of rotated lanes `r` wide, the pairs whose angles its two elements
    /// take (see [`RopeSpec::lane_angle`]).
    pub(crate) fn element_angle_pairs(&self, r: u64) -> Vec<(u32, u32)> {
        (0..r / 2)
            .map(|j| {
                let (i0, i1) = self.pair_elements(r, j);
                (self.lane_angle(r, i0) as u32, self.lane_angle(r, i1) as u32)
            })
            .collect()
    }

    /// A table laid out for the other layout: not with a learned table (its angles are per
    /// head), the inverse (the map is not a rotation, so negated sines do not undo it) or
    /// HF's pair-halves output.
    pub(super) fn check_table_layout(&self) -> Result<()> {
        if !self.lane_angles() {
            return Ok(());
        }
        if self.learned.is_some() || self.inverse || self.output_order == OutputOrder::PairHalves {
            return Err(Error::Unsupported(
                "a cos/sin table laid out for the other pair layout (RopeSpec::table_layout) \
                 takes the spec's frequencies, forward, in the pairs' output order: not with a \
                 learned table, the inverse or HF's pair-halves order",
            ));
        }
        Ok(())
    }
}
