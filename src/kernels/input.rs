//! What one pair pass is given: its views, positions, cos/sin cache and frequencies,
//! resolved and validated from a call (`kernels::rope`, `kernels::sinusoidal`).

use super::plan::IdsSpan;
use super::{PositionMode, Specialization};
use crate::dd::Dd;
use crate::positions::Positions;
use crate::tensor::Layout;

/// A u32 array resolved for a pass: its buffer and the index of its first value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Words<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub first: u64,
}

/// Where positions come from, resolved for the pass.
pub(crate) type PassPositions<'a> = Positions<Words<'a>>;

impl<A> Positions<A> {
    /// Which ids a block of a `[batch, _, seq, _]` view reads, for the planner.
    pub(crate) fn ids_span(&self, batch: u64, seq: u64) -> IdsSpan {
        match self {
            Positions::Start(_) => IdsSpan::None,
            Positions::BatchStarts(_) => IdsSpan::PerBatch,
            Positions::Ids(_) | Positions::Float(_) => IdsSpan::PerToken { seq },
            Positions::Varlen { num_seqs, .. } => IdsSpan::Whole(u64::from(*num_seqs) + 1),
            Positions::Axes(_) | Positions::FloatAxes(_) => IdsSpan::Axes {
                seq,
                axis_stride: batch * seq,
            },
        }
    }

    /// The variant compiled for these positions.
    pub(crate) fn mode(&self) -> PositionMode {
        match self {
            Positions::Start(_) => PositionMode::Start,
            Positions::BatchStarts(_) => PositionMode::BatchStarts,
            Positions::Ids(_) => PositionMode::Ids,
            Positions::Varlen { offsets, .. } => PositionMode::Varlen {
                offsets: offsets.is_some(),
            },
            Positions::Axes(_) => PositionMode::Axes,
            Positions::Float(_) => PositionMode::Float,
            Positions::FloatAxes(_) => PositionMode::FloatAxes,
        }
    }
}

/// A cos/sin cache resolved for a pass (element indices of f32 values).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PassCache<'a> {
    pub cos: Words<'a>,
    pub sin: Words<'a>,
    pub max_pos: u64,
    pub row_stride: u64,
    /// The u32 flag set when a position is clamped.
    pub flag: Words<'a>,
}

/// A tensor of a pass.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PassView<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub layout: Layout,
}

/// One pass over validated views.
#[derive(Clone, Debug)]
pub(crate) struct PairPass<'a> {
    pub spec: Specialization,
    /// View A: rotated in place, or the destination.
    pub a: PassView<'a>,
    /// View B: K (in place), or the source; `spec.second` says which.
    pub b: Option<PassView<'a>>,
    /// Pairs cover elements `[0, 2 * pairs)` of each row (`[0, pairs)` and `[half, half +
    /// pairs)` when `half` is larger).
    pub pairs: u64,
    /// Distance from a half-split pair's first element to its second: `pairs`, but for a
    /// sin-cos grid block whose cosines lie further on (timm's `[sin h | sin w | cos h |
    /// cos w]`).
    pub half: u64,
    /// Angular frequency of each pair, radians per position, and its M-RoPE axis.
    pub inv_freq: &'a [Dd],
    pub axes: &'a [u32],
    pub positions: PassPositions<'a>,
    pub cache: Option<PassCache<'a>>,
    /// Sinusoidal: the position whose row is zero.
    pub pad_pos: Option<u32>,
    pub sin_sign: f32,
    pub scale: f32,
}
