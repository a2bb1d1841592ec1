//! Views of GPU memory: a buffer, an element offset, a `[batch, heads, seq, dim]` shape and
//! strides, so BHSD, BSHD and other layouts are the same thing with other numbers.

use crate::error::{Error, Result};
use crate::spec::Dtype;

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
        Self {
            offset: 0,
            shape,
            strides: [h * s * d, s * d, d],
        }
    }

    /// `[batch, seq, heads, dim]` in memory (the projection output, flash-attention, vLLM),
    /// still addressed as `[batch, heads, seq, dim]`.
    pub fn bshd(shape: [u64; 4]) -> Self {
        let [_, h, s, d] = shape;
        Self {
            offset: 0,
            shape,
            strides: [s * h * d, d, h * d],
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

/// Which position each token has, for a view of `seq` tokens per batch row.
#[derive(Clone, Copy, Debug)]
pub enum Positions<'a> {
    /// Token `s` has position `start + s` in every batch row (prefill from 0, or decode with
    /// a KV cache of `start` tokens).
    Start(u32),
    /// Explicit ids, `[batch, seq]` row-major u32 (HF `position_ids`), in a GPU buffer.
    Ids {
        /// The buffer; needs `STORAGE` usage.
        buffer: &'a wgpu::Buffer,
        /// Byte offset of the first id (a multiple of 4).
        offset: u64,
    },
}

/// [`Positions`] for the host-slice methods.
#[derive(Clone, Copy, Debug)]
pub enum HostPositions<'a> {
    /// Token `s` has position `start + s`.
    Start(u32),
    /// Explicit ids, `[batch, seq]` row-major.
    Ids(&'a [u32]),
}
