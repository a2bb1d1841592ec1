//! What one pair pass is given: its views, positions, cos/sin cache and frequencies,
//! resolved and validated from a call (`kernels::rope`, `kernels::sinusoidal`).

use super::plan::IdsSpan;
use super::{PositionMode, Specialization};
use crate::dd::Dd;
use crate::error::{Error, Result};
use crate::positions::Positions;
use crate::tensor::{ArrayView, Layout};

/// A u32 array resolved for a pass: its buffer and the index of its first value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Words<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub first: u64,
}

/// Where positions come from, resolved for the pass.
pub(crate) type PassPositions<'a> = Positions<Words<'a>>;

impl<A> Positions<A> {
    /// Which ids a block of a `[batch, _, seq, _]` view reads, for the planner (`planes`
    /// position axes where there are axes).
    pub(crate) fn ids_span(&self, batch: u64, seq: u64, planes: u64) -> IdsSpan {
        match self {
            Positions::Start(_) => IdsSpan::None,
            Positions::BatchStarts(_) => IdsSpan::PerBatch,
            Positions::Ids(_) | Positions::Float(_) => IdsSpan::PerToken { seq },
            Positions::Varlen { num_seqs, .. } => IdsSpan::Whole(u64::from(*num_seqs) + 1),
            Positions::Axes(_) | Positions::FloatAxes(_) => IdsSpan::Axes {
                seq,
                axis_stride: batch * seq,
                planes,
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
    /// Pairs per half-split block where the pairs are in blocks
    /// ([`crate::RopeSpec::pair_blocks`]; the variant's `blocks`), else 0.
    pub block: u64,
    /// The heads of a caller's table ([`crate::RopeSpec::learned`], the variant's `dense`
    /// axes; `inv_freq` then holds `[axes, heads, pairs]`), else 0.
    pub dense_heads: u64,
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

/// Checks that `view` holds `count` 4-byte values and has `STORAGE` usage.
pub(crate) fn words<'a>(view: ArrayView<'a>, count: u64, what: &'static str) -> Result<Words<'a>> {
    if !view.buffer.usage().contains(wgpu::BufferUsages::STORAGE) {
        return Err(Error::MissingUsage {
            what,
            missing: wgpu::BufferUsages::STORAGE,
        });
    }
    if !view.offset.is_multiple_of(4) {
        return Err(Error::MisalignedOffset {
            what,
            offset: view.offset,
            elem: 4,
        });
    }
    let available = view.buffer.size().saturating_sub(view.offset) / 4;
    if available < count {
        return Err(Error::PositionIdsTooShort {
            what,
            needed: count,
            available,
        });
    }
    Ok(Words {
        buffer: view.buffer,
        first: view.offset / 4,
    })
}

/// The most whole revolutions a position a RoPE frequency may turn at f32 positions: they
/// share the frequency buffer's third word with the pair's axis (two bits), `axis | W << 2`.
pub(crate) const MAX_WHOLE_REVOLUTIONS: u32 = (1 << 30) - 1;

/// The third frequency words of RoPE at f32 positions: each pair's axis with its whole
/// revolutions a position above it (`axis | W << 2`; `shaders/common.wgsl` reads both), so
/// that a fractional position turns a frequency of a revolution or more exactly; `None`
/// where every frequency is below one revolution (the words are then the axes alone).
/// A frequency of `2^30` revolutions a position or more is refused.
pub(crate) fn float_axis_words(inv_freq: &[Dd], axes: &[u32]) -> Result<Option<Vec<u32>>> {
    let mut words: Option<Vec<u32>> = None;
    for (j, (&f, &axis)) in inv_freq.iter().zip(axes).enumerate() {
        let whole = crate::angle::whole_revolutions(f)
            .filter(|&w| w <= MAX_WHOLE_REVOLUTIONS)
            .ok_or(Error::InvalidParameter {
                what: "frequency with f32 positions",
                value: f.hi,
                need: "below 2 pi 2^30 radians a position (the whole revolutions an f32 \
                       position turns are carried in 30 bits)",
            })?;
        if whole > 0 {
            words.get_or_insert_with(|| axes.to_vec())[j] = axis | whole << 2;
        }
    }
    Ok(words)
}

/// Which positions a kernel reads.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reads {
    /// RoPE: position axes (u32 or f32) with an M-RoPE spec and only then; `planes` of them
    /// (3, or 4 for a fourth axis).
    Rope { mrope: bool, planes: u64 },
    /// The fused QKV call: as RoPE, u32 positions only.
    Fused { mrope: bool, planes: u64 },
    /// The sinusoidal encoding: one position a token, u32 or f32.
    Sinusoidal,
}

/// Checks positions against a view; returns them resolved and, for contiguous positions,
/// the sequence length that length-dependent scalings see (HF: the largest position + 1).
pub(crate) fn resolve_positions<'a>(
    positions: Positions<ArrayView<'a>>,
    layout: &Layout,
    reads: Reads,
) -> Result<(PassPositions<'a>, Option<u64>)> {
    let [b, _, s, _] = layout.shape;
    let axes = matches!(positions, Positions::Axes(_) | Positions::FloatAxes(_));
    let float = matches!(positions, Positions::Float(_) | Positions::FloatAxes(_));
    match reads {
        Reads::Rope { mrope, .. } | Reads::Fused { mrope, .. } if mrope != axes => {
            return Err(Error::PositionsMismatch(
                "position axes (RopeSpec::mrope, axes_rope) and Positions::Axes or FloatAxes \
                 go together: give both or neither",
            ));
        }
        Reads::Fused { .. } if float => {
            return Err(Error::PositionsMismatch(
                "the fused QKV call takes u32 positions; f32 positions are for encode_rope \
                 and the sinusoidal encoding",
            ));
        }
        Reads::Sinusoidal if axes => {
            return Err(Error::PositionsMismatch(
                "the sinusoidal encoding has one position per token, not M-RoPE axes",
            ));
        }
        _ => {}
    }
    match positions {
        Positions::Start(start) => check_contiguous_positions(start, s)?,
        Positions::Varlen { num_seqs, .. } if b != 1 || num_seqs == 0 => {
            return Err(Error::PositionsMismatch(
                "varlen positions need a view of batch 1 holding every token on its seq axis, \
                 and at least one sequence",
            ));
        }
        _ => {}
    }
    let seq_len = match positions {
        Positions::Start(start) => Some(u64::from(start) + s),
        _ => None,
    };
    let planes = match reads {
        Reads::Rope { planes, .. } | Reads::Fused { planes, .. } => planes,
        Reads::Sinusoidal => 3,
    };
    let resolved =
        positions.try_map_planes(b, s, planes, |v, need| words(v, need.count, need.what))?;
    Ok((resolved, seq_len))
}

/// `start + seq - 1` must be a u32 position.
pub(crate) fn check_contiguous_positions(start: u32, seq: u64) -> Result<()> {
    if seq > 0 && u64::from(start).saturating_add(seq - 1) > u64::from(u32::MAX) {
        return Err(Error::PositionOverflow {
            start: u64::from(start),
            seq,
        });
    }
    Ok(())
}
