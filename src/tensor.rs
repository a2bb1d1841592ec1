//! Views of GPU memory: a buffer, an element offset, a `[batch, heads, seq, dim]` shape and
//! strides, so BHSD, BSHD and other layouts are the same thing with other numbers.

use crate::error::{Error, Result};
use crate::spec::Dtype;

/// The extents of a `[batch, seq, heads, head_dim]` (BSHD) tensor, by name: the memory
/// order and the crate's axis order (`Layout::shape` is `[batch, heads, seq, head_dim]`)
/// differ, so [`Layout::bshd`] takes names rather than an array that could be read either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dims {
    /// Batch rows.
    pub batch: u64,
    /// Heads.
    pub heads: u64,
    /// Tokens.
    pub seq: u64,
    /// Elements of one head.
    pub head_dim: u64,
}

impl Dims {
    /// From a shape in the crate's axis order `[batch, heads, seq, head_dim]` (the order of
    /// `Layout::shape`), not the memory order of a BSHD tensor.
    pub fn from_logical([batch, heads, seq, head_dim]: [u64; 4]) -> Self {
        Self {
            batch,
            heads,
            seq,
            head_dim,
        }
    }
}

/// Where the elements of a `[batch, heads, seq, dim]` tensor are, in elements of its dtype.
///
/// Element `(b, h, s, d)` is at `offset + b * strides[0] + h * strides[1] + s * strides[2] + d`:
/// the `dim` axis is contiguous, the others are free.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    /// Index of element `(0, 0, 0, 0)`.
    pub offset: u64,
    /// `[batch, heads, seq, dim]`.
    pub shape: [u64; 4],
    /// Strides of batch, heads and seq, in elements.
    pub strides: [u64; 3],
}

impl Layout {
    /// `[batch, heads, seq, dim]` in that order in memory (HF transformers' attention layout).
    pub fn bhsd(shape: [u64; 4]) -> Self {
        let [_, h, s, d] = shape;
        // Saturating: a shape whose strides overflow is refused by `end` (ShapeOverflow).
        Self {
            offset: 0,
            shape,
            strides: [
                h.saturating_mul(s).saturating_mul(d),
                s.saturating_mul(d),
                d,
            ],
        }
    }

    /// `[batch, seq, heads, dim]` in memory (the projection output, flash-attention, vLLM),
    /// still addressed as `[batch, heads, seq, dim]`. The extents are named ([`Dims`]): an
    /// array could be read in either order, and both have the same size.
    pub fn bshd(dims: Dims) -> Self {
        let Dims {
            batch: b,
            heads: h,
            seq: s,
            head_dim: d,
        } = dims;
        // Saturating: a shape whose strides overflow is refused by `end` (ShapeOverflow).
        Self {
            offset: 0,
            shape: [b, h, s, d],
            strides: [
                s.saturating_mul(h).saturating_mul(d),
                d,
                h.saturating_mul(d),
            ],
        }
    }

    /// `[batch, seq, d_model]` rows (embeddings), as `[batch, 1, seq, d_model]`.
    pub fn bsd(batch: u64, seq: u64, d_model: u64) -> Self {
        Self::bhsd([batch, 1, seq, d_model])
    }

    /// A `[seq, d_model]` table, as `[1, 1, seq, d_model]`.
    pub fn rows(seq: u64, d_model: u64) -> Self {
        Self::bhsd([1, 1, seq, d_model])
    }

    /// Any strides (in elements; the last axis is contiguous).
    pub fn strided(shape: [u64; 4], strides: [u64; 3]) -> Self {
        Self {
            offset: 0,
            shape,
            strides,
        }
    }

    /// The same layout starting `offset` elements into the buffer.
    pub fn with_offset(mut self, offset: u64) -> Self {
        self.offset = offset;
        self
    }

    /// The same memory with the heads and tokens axes swapped: a call over it turns each
    /// head by its index (its "token" position, [`Positions::Start`](crate::Positions::Start)
    /// 0) at every token, as the modules of [`PositionAxis::Head`](crate::PositionAxis::Head)
    /// rotate.
    pub fn heads_as_tokens(mut self) -> Self {
        self.shape.swap(1, 2);
        self.strides.swap(1, 2);
        self
    }

    /// Number of (batch, head, token) rows.
    pub fn rows_count(&self) -> u64 {
        self.shape[0]
            .saturating_mul(self.shape[1])
            .saturating_mul(self.shape[2])
    }

    /// One past the highest element index the view touches (0 when it is empty), checking
    /// that rows do not overlap and that indexing fits in u64.
    pub fn end(&self) -> Result<u64> {
        let overflow = || Error::ShapeOverflow {
            shape: self.shape,
            strides: self.strides,
            limit: "u64",
        };
        let [b, h, s, d] = self.shape;
        if b == 0 || h == 0 || s == 0 || d == 0 {
            return Ok(0);
        }
        // Every element count must fit u64 as well as every index.
        b.checked_mul(h)
            .and_then(|v| v.checked_mul(s))
            .and_then(|v| v.checked_mul(d))
            .ok_or_else(overflow)?;
        let mut last = self.offset;
        for (n, st) in [b, h, s].into_iter().zip(self.strides) {
            last = (n - 1)
                .checked_mul(st)
                .and_then(|v| v.checked_add(last))
                .ok_or_else(overflow)?;
        }
        let end = last.checked_add(d).ok_or_else(overflow)?;
        self.check_disjoint()?;
        Ok(end)
    }

    /// Rows must not share elements: sorted by stride, each axis must step past everything
    /// the faster axes span (axes of extent 1 never step).
    fn check_disjoint(&self) -> Result<()> {
        let mut axes: Vec<(u64, u64)> = [0, 1, 2]
            .into_iter()
            .filter(|&i| self.shape[i] > 1)
            .map(|i| (self.strides[i], self.shape[i]))
            .collect();
        axes.sort_unstable();
        let mut span = self.shape[3];
        for (stride, n) in axes {
            if stride < span {
                return Err(Error::OverlappingRows {
                    shape: self.shape,
                    strides: self.strides,
                });
            }
            // (n - 1) * stride + span: bounded by `end`, which was checked for overflow.
            span += (n - 1) * stride;
        }
        Ok(())
    }
}

/// A tensor in GPU memory: a buffer and the layout of the tensor inside it.
#[derive(Clone, Copy, Debug)]
pub struct TensorView<'a> {
    /// The buffer; needs `STORAGE` usage.
    pub buffer: &'a wgpu::Buffer,
    /// Where the elements are, in elements of `dtype`.
    pub layout: Layout,
    /// Element type.
    pub dtype: Dtype,
}

impl<'a> TensorView<'a> {
    /// An f32 tensor.
    pub fn new(buffer: &'a wgpu::Buffer, layout: Layout) -> Self {
        Self {
            buffer,
            layout,
            dtype: Dtype::F32,
        }
    }

    /// The same view with another element type.
    pub fn with_dtype(mut self, dtype: Dtype) -> Self {
        self.dtype = dtype;
        self
    }
}

/// An array of 4-byte values in a GPU buffer: u32 positions (ids, per-row starts,
/// `cu_seqlens`) or an f32 cos/sin cache.
#[derive(Clone, Copy, Debug)]
pub struct ArrayView<'a> {
    /// The buffer; needs `STORAGE` usage.
    pub buffer: &'a wgpu::Buffer,
    /// Byte offset of the first value (a multiple of 4).
    pub offset: u64,
}

impl<'a> ArrayView<'a> {
    /// The values from the start of `buffer`.
    pub fn new(buffer: &'a wgpu::Buffer) -> Self {
        Self { buffer, offset: 0 }
    }

    /// The values from byte `offset` of `buffer`.
    pub fn at(buffer: &'a wgpu::Buffer, offset: u64) -> Self {
        Self { buffer, offset }
    }
}

/// A caller-provided cos/sin cache (the vLLM `cos_sin_cache` and ONNX Runtime
/// `cos_cache`/`sin_cache` conventions): the cos and sin of pair `j` at position `p` are the
/// f32 values at index `p * row_stride + j` of `cos` and of `sin`. Angles then come from it
/// instead of the frequencies: the spec's base, scaling and attention factor are not used.
/// The values are taken as the final cos and sin, the attention factor (YaRN's mscale,
/// LongRoPE's scaling) already in them, as HF transformers' rotary modules return them and
/// vLLM builds its `cos_sin_cache` (tested with a cache built by HF's own code,
/// `tests/data/hf/hf_cos_sin_cache.py`). Only `RopeSpec::inverse` still applies.
#[derive(Clone, Copy, Debug)]
pub struct CosSinCache<'a> {
    /// First cos value.
    pub cos: ArrayView<'a>,
    /// First sin value.
    pub sin: ArrayView<'a>,
    /// Number of positions (rows).
    pub max_pos: u64,
    /// f32 values between rows.
    pub row_stride: u64,
    /// A u32 the kernel sets to 1 when a position read on the GPU was past the cache (the
    /// position is then clamped to the last row). Needed when positions are on the GPU;
    /// contiguous positions are checked on the host instead.
    pub overflow_flag: Option<ArrayView<'a>>,
}

impl<'a> CosSinCache<'a> {
    /// vLLM's `cos_sin_cache` `[max_pos, r]`: each row is `r/2` cos then `r/2` sin.
    pub fn vllm(buffer: &'a wgpu::Buffer, max_pos: u64, rotary_dim: u64) -> Self {
        Self {
            cos: ArrayView::new(buffer),
            sin: ArrayView::at(buffer, rotary_dim / 2 * 4),
            max_pos,
            row_stride: rotary_dim,
            overflow_flag: None,
        }
    }

    /// ONNX Runtime's separate `cos_cache` and `sin_cache`, each `[max_pos, r/2]`.
    pub fn split(
        cos: &'a wgpu::Buffer,
        sin: &'a wgpu::Buffer,
        max_pos: u64,
        rotary_dim: u64,
    ) -> Self {
        Self {
            cos: ArrayView::new(cos),
            sin: ArrayView::new(sin),
            max_pos,
            row_stride: rotary_dim / 2,
            overflow_flag: None,
        }
    }

    /// Where to flag positions past the cache.
    pub fn with_overflow_flag(mut self, flag: ArrayView<'a>) -> Self {
        self.overflow_flag = Some(flag);
        self
    }
}

/// Whether two valid views (each passed [`Layout::end`]) of one buffer share an element:
/// `Some(true)` or `Some(false)` when decided, `None` when the strides are too irregular to
/// decide within a bounded amount of work.
///
/// A valid view is nested: sorted by stride, each axis steps over the whole span of the axes
/// below it. So the view is `offset + t * P + (the rest)` with the rest inside `[0, P)` for
/// its outermost axis of stride `P`, and two views whose outermost axes have the same stride
/// meet only where `t - t'` is one of the two integers `k` with `|offset_b - offset_a - k P|
/// < P`: each case is the same question one axis down. Views with different strides are
/// split along the larger one, only where it can reach the other's hull.
pub(crate) fn views_share_elements(a: &Layout, b: &Layout) -> Option<bool> {
    let pattern = |l: &Layout| -> Pattern {
        let mut axes: Vec<(i128, i128)> = (0..3)
            .filter(|&i| l.shape[i] > 1)
            .map(|i| (i128::from(l.strides[i]), i128::from(l.shape[i])))
            .collect();
        axes.sort_unstable();
        Pattern {
            offset: i128::from(l.offset),
            axes,
            row: i128::from(l.shape[3]),
        }
    };
    if a.shape.contains(&0) || b.shape.contains(&0) {
        return Some(false);
    }
    let mut budget = 1u32 << 16;
    meet(&pattern(a), &pattern(b), &mut budget)
}

/// `offset + sum(k_i * stride_i) + [0, row)` over `k_i < extent_i`, axes sorted by stride.
#[derive(Clone, Debug)]
struct Pattern {
    offset: i128,
    axes: Vec<(i128, i128)>,
    row: i128,
}

impl Pattern {
    fn end(&self) -> i128 {
        self.offset + self.axes.iter().map(|(s, n)| s * (n - 1)).sum::<i128>() + self.row
    }

    /// The outermost axis and the pattern below it, at offset `offset`.
    fn split(&self, offset: i128) -> ((i128, i128), Pattern) {
        let mut rest = self.clone();
        let outer = rest.axes.pop().expect("an axis");
        rest.offset = offset;
        (outer, rest)
    }
}

fn meet(a: &Pattern, b: &Pattern, budget: &mut u32) -> Option<bool> {
    *budget = budget.checked_sub(1)?;
    if a.end() <= b.offset || b.end() <= a.offset {
        return Some(false);
    }
    let pa = a.axes.last().map_or(0, |x| x.0);
    let pb = b.axes.last().map_or(0, |x| x.0);
    if pa == 0 && pb == 0 {
        // Two rows whose hulls meet.
        return Some(true);
    }
    if pa == pb {
        let p = pa;
        let ((_, na), ra) = a.split(0);
        let ((_, nb), _) = b.split(0);
        let delta = b.offset - a.offset;
        let q = delta.div_euclid(p);
        for k in [q, q + 1] {
            if k > na - 1 || k < -(nb - 1) {
                continue;
            }
            let (_, rb) = b.split(delta - k * p);
            if meet(&ra, &rb, budget)? {
                return Some(true);
            }
        }
        return Some(false);
    }
    // Split the view with the larger outer stride, over the steps that reach the other hull.
    let (big, small) = if pa > pb { (a, b) } else { (b, a) };
    let ((p, n), _) = big.split(0);
    let rest_span = big.split(0).1.end();
    let first = ((small.offset - big.offset - rest_span).div_euclid(p) + 1).max(0);
    let last = ((small.end() - 1 - big.offset).div_euclid(p)).min(n - 1);
    for t in first..=last {
        let (_, rest) = big.split(big.offset + t * p);
        if meet(&rest, small, budget)? {
            return Some(true);
        }
    }
    Some(false)
}

#[cfg(test)]
mod overlap_tests {
    use super::*;

    /// Every element of a small view, by enumeration.
    fn elements(l: &Layout) -> std::collections::BTreeSet<u64> {
        let mut set = std::collections::BTreeSet::new();
        for b in 0..l.shape[0] {
            for h in 0..l.shape[1] {
                for s in 0..l.shape[2] {
                    for d in 0..l.shape[3] {
                        set.insert(
                            l.offset + b * l.strides[0] + h * l.strides[1] + s * l.strides[2] + d,
                        );
                    }
                }
            }
        }
        set
    }

    #[test]
    fn packed_qkv_heads_are_disjoint_and_shifted_views_are_not() {
        // [T, (Hq + 2 Hkv) * D] with Hq = 4, Hkv = 2, D = 8: Q heads 0..4, K heads 4..6.
        let (hq, hkv, d, t) = (4, 2, 8, 5);
        let row = (hq + 2 * hkv) * d;
        let q = Layout::strided([1, hq, t, d], [0, d, row]);
        let k = Layout::strided([1, hkv, t, d], [0, d, row]).with_offset(hq * d);
        assert_eq!(views_share_elements(&q, &k), Some(false));
        assert_eq!(views_share_elements(&q, &q), Some(true));
        let shifted = Layout::strided([1, hkv, t, d], [0, d, row]).with_offset((hq - 1) * d);
        assert_eq!(views_share_elements(&q, &shifted), Some(true));
    }

    #[test]
    fn agrees_with_enumeration_on_many_small_views() {
        // A deterministic sweep over offsets, strides and shapes of valid views.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut checked = 0;
        while checked < 3000 {
            let mut view = || {
                let shape = [1 + next(3), 1 + next(3), 1 + next(4), 2 * (1 + next(3))];
                let strides = [next(60), next(30), next(20)];
                Layout::strided(shape, strides).with_offset(next(40))
            };
            let (a, b) = (view(), view());
            if a.end().is_err() || b.end().is_err() {
                continue;
            }
            let expected = !elements(&a).is_disjoint(&elements(&b));
            assert_eq!(views_share_elements(&a, &b), Some(expected), "{a:?} {b:?}");
            checked += 1;
        }
    }
}
