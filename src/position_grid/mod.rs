//! Position grids: the position arrays of image and video tokens (FLUX's and FLUX.2's ids,
//! Wan's and HunyuanVideo's `(t, h, w)`, Qwen-Image's centered grid, Qwen2-VL's merge
//! blocks), described by a few numbers and built on the GPU
//! ([`PosEnc::encode_position_grid`](crate::PosEnc::encode_position_grid)) into the
//! `[axes, batch, seq]` array that [`Positions::FloatAxes`](crate::Positions::FloatAxes)
//! reads, so that a caller passes `(frames, height, width)` rather than builds `3 x N`
//! values on the host and uploads them.
//!
//! A grid is a sequence of segments (text tokens, an image, reference images, ...). A
//! segment is a row-major block of up to [`GRID_DIMS`] dimensions; the position of its token
//! at multi-index `i` on axis `a` is `f32(offset_a + Σ_d steps_a[d] * i[d]) * scale_a`: an
//! integer sum, exact in f32 (the grid is refused where it could pass `2^24`), times one
//! f32 product. The GPU and [`PositionGrid::positions`] compute exactly this, so their
//! values are the same bits on every adapter.

use crate::error::{Error, Result};
use crate::positions::float_position_ok;

/// Dimensions of one segment at most (`[t, h / m, w / m, m, m]` for merge blocks).
pub const GRID_DIMS: usize = 5;
/// Segments of one grid at most.
pub const MAX_GRID_SEGMENTS: usize = 16;
/// The most values [`PositionGrid::positions`] computes on the host (1 GiB of f32).
pub const MAX_HOST_POSITIONS: u64 = 1 << 28;
/// The largest magnitude of a segment's integer sum: every such integer is an f32.
const EXACT_SUM: i64 = 1 << 24;
/// The least magnitude of a non-zero scale: every non-zero position is then a normal f32.
const MIN_SCALE: f32 = 1.0 / 18_446_744_073_709_551_616.0;

/// How one axis's position follows from a token's multi-index in its segment:
/// `f32(offset + Σ_d steps[d] * index[d]) * scale`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridAxis {
    /// The integer added to the sum.
    pub offset: i32,
    /// The integer weight of each dimension's index (slowest dimension first).
    pub steps: [i32; GRID_DIMS],
    /// The f32 factor of the sum (1 for integer positions).
    pub scale: f32,
}

impl GridAxis {
    /// The same position `value` for every token of the segment.
    pub fn constant(value: i32) -> Self {
        Self {
            offset: value,
            steps: [0; GRID_DIMS],
            scale: 1.0,
        }
    }

    /// The index on dimension `dim` (0 is the slowest); a `dim` past [`GRID_DIMS`] is
    /// refused by [`PositionGrid::validate`].
    pub fn index(dim: usize) -> Self {
        let mut steps = [0; GRID_DIMS];
        let out_of_range = dim >= GRID_DIMS;
        if let Some(s) = steps.get_mut(dim) {
            *s = 1;
        }
        Self {
            offset: 0,
            steps,
            // NaN marks a dimension that does not exist: validate says so.
            scale: if out_of_range { f32::NAN } else { 1.0 },
        }
    }

    /// `Σ_d steps[d] * index[d]`.
    pub fn sum(steps: [i32; GRID_DIMS]) -> Self {
        Self {
            offset: 0,
            steps,
            scale: 1.0,
        }
    }

    /// The same axis with `offset` added to its integer sum.
    pub fn plus(mut self, offset: i32) -> Self {
        self.offset = self.offset.saturating_add(offset);
        self
    }

    /// The same axis with its sum multiplied by the f32 `scale`.
    pub fn scaled(mut self, scale: f32) -> Self {
        self.scale = scale;
        self
    }

    /// The integer sum at multi-index `index`.
    fn integer(&self, index: &[u64; GRID_DIMS]) -> i64 {
        let terms = self.steps.iter().zip(index);
        i64::from(self.offset) + terms.map(|(&s, &i)| i64::from(s) * i as i64).sum::<i64>()
    }
}

/// One block of tokens of a [`PositionGrid`], in row-major order over `shape`.
#[derive(Clone, Debug, PartialEq)]
pub struct GridSegment {
    /// Extent of each dimension, slowest first (1 to [`GRID_DIMS`] of them).
    pub shape: Vec<u32>,
    /// One entry per axis of the grid.
    pub axes: Vec<GridAxis>,
}

impl GridSegment {
    /// A block of `shape` whose axes follow `axes`.
    pub fn new(shape: &[u32], axes: &[GridAxis]) -> Self {
        Self {
            shape: shape.to_vec(),
            axes: axes.to_vec(),
        }
    }

    /// `tokens` tokens at the same position `values` (one value per axis): text tokens, or
    /// tokens that are not rotated (all zeros).
    pub fn constant(tokens: u32, values: &[i32]) -> Self {
        let axes: Vec<GridAxis> = values.iter().map(|&v| GridAxis::constant(v)).collect();
        Self::new(&[tokens], &axes)
    }

    /// Tokens in the segment (saturating at `u64::MAX`).
    pub fn tokens(&self) -> u64 {
        self.shape
            .iter()
            .fold(1u64, |n, &e| n.saturating_mul(u64::from(e)))
    }

    /// The multi-index of the segment's token `k`.
    fn index(&self, mut k: u64) -> [u64; GRID_DIMS] {
        let mut index = [0; GRID_DIMS];
        for (d, &extent) in self.shape.iter().enumerate().rev() {
            index[d] = k % u64::from(extent);
            k /= u64::from(extent);
        }
        index
    }

    /// The least and the largest integer sum of `axis` over the segment: the sum is affine
    /// in the index, so they are at corners.
    fn sum_range(&self, axis: &GridAxis) -> (i64, i64) {
        let (mut lo, mut hi) = (i64::from(axis.offset), i64::from(axis.offset));
        for (&s, &extent) in axis.steps.iter().zip(&self.shape) {
            let far = i64::from(s).saturating_mul((i64::from(extent) - 1).max(0));
            lo = lo.saturating_add(far.min(0));
            hi = hi.saturating_add(far.max(0));
        }
        (lo, hi)
    }
}

/// The positions of a sequence of segments, on `axes` axes: what
/// [`PosEnc::encode_position_grid`](crate::PosEnc::encode_position_grid) writes as
/// `[axes, batch, tokens]` f32 values (every batch row the same), the array of
/// [`Positions::FloatAxes`](crate::Positions::FloatAxes) (3 or 4 axes) or
/// [`Positions::Float`](crate::Positions::Float) (1 axis).
#[derive(Clone, Debug, PartialEq)]
pub struct PositionGrid {
    /// Position axes: 1, 3 or 4.
    pub axes: usize,
    /// The segments, in token order.
    pub segments: Vec<GridSegment>,
}

impl PositionGrid {
    /// A grid of no tokens on `axes` axes.
    pub fn new(axes: usize) -> Self {
        Self {
            axes,
            segments: Vec::new(),
        }
    }

    /// The same grid with `segment` after its tokens.
    pub fn then(mut self, segment: GridSegment) -> Self {
        self.segments.push(segment);
        self
    }

    /// Tokens in the grid (saturating at `u64::MAX`).
    pub fn tokens(&self) -> u64 {
        self.segments
            .iter()
            .fold(0u64, |n, s| n.saturating_add(s.tokens()))
    }

    /// Checks what the GPU and the host need: 1, 3 or 4 axes; 1 to [`MAX_GRID_SEGMENTS`]
    /// segments of 1 to [`GRID_DIMS`] non-zero dimensions, each with one [`GridAxis`] per
    /// axis; fewer than 2^31 tokens; every integer sum within ±2^24 (exact in f32); every
    /// scale finite and every position finite with `|p| < 2^32` (the exact-angle range).
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: String| Err(Error::InvalidPositionGrid { reason });
        if !matches!(self.axes, 1 | 3 | 4) {
            return bad(format!(
                "{} axes: a grid has 1, 3 or 4 (the planes of Positions::Float and \
                 FloatAxes); give an axis that is not used GridAxis::constant(0)",
                self.axes
            ));
        }
        if self.segments.is_empty() || self.segments.len() > MAX_GRID_SEGMENTS {
            return bad(format!(
                "{} segments: a grid has 1 to {MAX_GRID_SEGMENTS}",
                self.segments.len()
            ));
        }
        for (k, seg) in self.segments.iter().enumerate() {
            check_segment(k, seg, self.axes).or_else(bad)?;
        }
        if self.tokens() >= 1 << 31 {
            return bad(format!("{} tokens: fewer than 2^31", self.tokens()));
        }
        Ok(())
    }

    /// The positions, `[axes, batch, tokens]` row-major, computed on the host as the GPU
    /// computes them (the same f32 values); at most [`MAX_HOST_POSITIONS`] values (larger
    /// grids are written on the GPU only).
    pub fn positions(&self, batch: u64) -> Result<Vec<f32>> {
        self.validate()?;
        let count = self
            .tokens()
            .saturating_mul(batch)
            .saturating_mul(self.axes as u64);
        if count > MAX_HOST_POSITIONS {
            return Err(Error::InvalidPositionGrid {
                reason: format!(
                    "{} tokens x {batch} batch rows x {} axes: at most 2^28 values on the \
                     host (PosEnc::encode_position_grid writes larger grids on the GPU)",
                    self.tokens(),
                    self.axes
                ),
            });
        }
        let row = self.row(0..self.tokens());
        let mut out = Vec::with_capacity(count as usize);
        for a in 0..self.axes {
            for _ in 0..batch {
                out.extend(row.iter().map(|p| p[a]));
            }
        }
        Ok(out)
    }

    /// The positions of the grid's tokens `range` (token-major, one `[f32; 4]` a token).
    fn row(&self, range: std::ops::Range<u64>) -> Vec<[f32; 4]> {
        let mut out = Vec::new();
        let mut first = 0;
        for seg in &self.segments {
            let n = seg.tokens();
            let (lo, hi) = (range.start.max(first), range.end.min(first + n));
            for t in lo..hi {
                let index = seg.index(t - first);
                let mut p = [0.0; 4];
                for (slot, axis) in p.iter_mut().zip(&seg.axes) {
                    *slot = axis.integer(&index) as f32 * axis.scale;
                }
                out.push(p);
            }
            first += n;
        }
        out
    }

    /// The words of the GPU's description: per segment its first token, its tokens, its
    /// shape (padded with 1s), and per axis the offset, the steps and the scale's bits.
    pub(crate) fn words(&self) -> Vec<u32> {
        let mut words = Vec::with_capacity(self.segments.len() * SEGMENT_WORDS);
        let mut first = 0u64;
        for seg in &self.segments {
            words.extend([first as u32, seg.tokens() as u32]);
            words.extend((0..GRID_DIMS).map(|d| seg.shape.get(d).copied().unwrap_or(1)));
            for a in 0..4 {
                let axis = seg.axes.get(a).copied().unwrap_or(GridAxis::constant(0));
                words.push(axis.offset as u32);
                words.extend(axis.steps.iter().map(|&s| s as u32));
                words.push(axis.scale.to_bits());
            }
            words.resize(words.len().next_multiple_of(SEGMENT_WORDS), 0);
            first += seg.tokens();
        }
        words
    }
}

/// Words of one segment in the GPU's description (`shaders/position_grid.wgsl`).
pub(crate) const SEGMENT_WORDS: usize = 40;

/// One segment's checks (see [`PositionGrid::validate`]), the reason on failure.
fn check_segment(k: usize, seg: &GridSegment, axes: usize) -> std::result::Result<(), String> {
    if seg.shape.is_empty() || seg.shape.len() > GRID_DIMS || seg.shape.contains(&0) {
        return Err(format!(
            "segment {k}: shape {:?}: 1 to {GRID_DIMS} dimensions, none of them 0",
            seg.shape
        ));
    }
    if seg.axes.len() != axes {
        return Err(format!(
            "segment {k}: {} axes for a grid of {axes}",
            seg.axes.len()
        ));
    }
    for (a, axis) in seg.axes.iter().enumerate() {
        if axis.steps[seg.shape.len()..].iter().any(|&s| s != 0) || !axis.scale.is_finite() {
            return Err(format!(
                "segment {k}, axis {a}: steps on dimensions past its {} or a scale that is \
                 not finite ({})",
                seg.shape.len(),
                axis.scale
            ));
        }
        if axis.scale != 0.0 && axis.scale.abs() < MIN_SCALE {
            return Err(format!(
                "segment {k}, axis {a}: scale {:e}: 0 or at least 2^-64 in magnitude (smaller \
                 products can be subnormal, which GPUs flush to zero)",
                axis.scale
            ));
        }
        let (lo, hi) = seg.sum_range(axis);
        if lo < -EXACT_SUM || hi > EXACT_SUM {
            return Err(format!(
                "segment {k}, axis {a}: integer sums from {lo} to {hi}: within ±2^24 (exact \
                 in f32); scale a smaller sum instead"
            ));
        }
        let far = (lo.abs().max(hi.abs()) as f32) * axis.scale.abs();
        if !float_position_ok(far) {
            return Err(format!(
                "segment {k}, axis {a}: positions up to {far}: |p| < 2^32 (the exact-angle range)"
            ));
        }
    }
    Ok(())
}

mod models;
