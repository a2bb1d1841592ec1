//! Which position each token has: one type, [`Positions<A>`], wherever its arrays live — in
//! GPU buffers (`Positions<ArrayView>`, what `encode_*` take), in host slices
//! ([`HostPositions`], what the `*_host` methods and the reference take), or resolved to
//! buffer words for a pass (inside the crate). A new position mode is a new variant here and
//! its reading in the shader; the conversions between the forms are [`Positions::map`].

use std::convert::Infallible;

use crate::error::{Error, Result};
use crate::tensor::Layout;

/// Which position each token of a `[batch, heads, seq, dim]` view has. `A` is an array of
/// u32 values: an [`ArrayView`](crate::ArrayView) of a GPU buffer for the `encode_*`
/// methods, a `&[u32]` ([`HostPositions`]) for the host methods and the reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Positions<A> {
    /// Token `s` has position `start + s` in every batch row (prefill from 0, or decode after
    /// a KV cache of `start` tokens).
    Start(u32),
    /// One start per batch row, `[batch]`: token `s` of row `b` has position `starts[b] + s`
    /// (decoding several sequences of different lengths together). Starts read on the GPU
    /// cannot be checked before the dispatch: `starts[b] + seq - 1` must not pass `u32::MAX`
    /// (it would wrap). [`PosEnc::rope_host`](crate::PosEnc::rope_host) checks it.
    BatchStarts(A),
    /// Explicit ids, `[batch, seq]` row-major (HF `position_ids`, vLLM `positions`).
    Ids(A),
    /// Packed variable-length sequences (flash-attention `cu_seqlens`): the view holds all
    /// tokens on its seq axis (batch 1); sequence `i` is tokens `cu_seqlens[i]..cu_seqlens[i+1]`
    /// and its positions restart at `offsets[i]` (0 without offsets). `cu_seqlens` must be
    /// non-decreasing from 0, as the kernel finds a token's sequence by binary search; a
    /// malformed array on the GPU gives wrong positions but never a read or write outside the
    /// buffers (on the host it is an error). [`HostPositions::varlen`] counts the sequences
    /// from the slice.
    Varlen {
        /// `num_seqs + 1` cumulative lengths, `cu_seqlens[0] = 0`, last = tokens.
        cu_seqlens: A,
        /// Number of sequences.
        num_seqs: u32,
        /// Optional first position of each sequence, `[num_seqs]`.
        offsets: Option<A>,
    },
    /// Three position axes per token for M-RoPE (temporal, height, width), `[3, batch, seq]`
    /// (`[4, batch, seq]` for a spec with a fourth axis, [`RopeSpec::axes_rope4`](crate::RopeSpec::axes_rope4))
    /// (HF Qwen2-VL `position_ids`). Needs [`RopeSpec::mrope`](crate::RopeSpec::mrope).
    Axes(A),
    /// f32 positions, `[batch, seq]` row-major, each value's bits as a u32
    /// ([`f32::to_bits`]; [`HostPositions::float`] casts a `&[f32]`): diffusion timesteps,
    /// fractional coordinates, negative positions. The sinusoidal encoding takes them; the
    /// angle is exact for the given f32 value (`|p| < 2^32`). On the host a NaN, an infinity
    /// or `|p| >= 2^32` is an error; read on the GPU, such a position gives NaN rows.
    /// RoPE takes them too (1-D, without M-RoPE).
    Float(A),
    /// f32 positions on three (or four) axes, `[3, batch, seq]` as [`Positions::Axes`], each value's
    /// bits: RoPE over position axes ([`RopeSpec::axes_rope`](crate::RopeSpec::axes_rope),
    /// [`RopeSpec::mrope`](crate::RopeSpec::mrope)) at negative (centered grids) or
    /// fractional coordinates, exact like [`Positions::Float`] and refused or NaN alike.
    FloatAxes(A),
}

/// [`Positions`] in host slices, for the `*_host` methods and the reference.
pub type HostPositions<'a> = Positions<&'a [u32]>;

/// One array of a [`Positions`]: what it is called in errors and how many values a view reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Need {
    pub what: &'static str,
    pub count: u64,
}

impl<A> Positions<A> {
    /// The same positions with the arrays borrowed.
    pub fn as_ref(&self) -> Positions<&A> {
        match self {
            Positions::Start(start) => Positions::Start(*start),
            Positions::BatchStarts(v) => Positions::BatchStarts(v),
            Positions::Ids(v) => Positions::Ids(v),
            Positions::Varlen {
                cu_seqlens,
                num_seqs,
                offsets,
            } => Positions::Varlen {
                cu_seqlens,
                num_seqs: *num_seqs,
                offsets: offsets.as_ref(),
            },
            Positions::Axes(v) => Positions::Axes(v),
            Positions::Float(v) => Positions::Float(v),
            Positions::FloatAxes(v) => Positions::FloatAxes(v),
        }
    }

    /// The same positions with each array replaced by `f(array)`: e.g. host slices uploaded
    /// to buffers, then buffers to [`ArrayView`](crate::ArrayView)s:
    /// `let gpu = host.map(|v| upload(v)); encode(.., gpu.as_ref().map(ArrayView::new))`.
    ///
    /// ```
    /// use wgpu_posenc::{HostPositions, Positions};
    /// let (cu, offsets) = ([0u32, 3, 8], [100u32, 0]);
    /// let host = HostPositions::varlen(&cu, Some(&offsets));
    /// let owned: Positions<Vec<u32>> = host.map(|v| v.to_vec());
    /// let expected = Positions::Varlen {
    ///     cu_seqlens: vec![0, 3, 8],
    ///     num_seqs: 2,
    ///     offsets: Some(vec![100, 0]),
    /// };
    /// assert_eq!(owned, expected);
    /// ```
    pub fn map<B>(self, mut f: impl FnMut(A) -> B) -> Positions<B> {
        match self.try_map(0, 0, |a, _| Ok::<B, Infallible>(f(a))) {
            Ok(p) => p,
            Err(never) => match never {},
        }
    }

    /// [`Positions::map`] with a conversion that can fail: every array converted, or the
    /// first error (arrays in the order of the variant's fields).
    pub fn try_map_arrays<B, E>(
        self,
        mut f: impl FnMut(A) -> std::result::Result<B, E>,
    ) -> std::result::Result<Positions<B>, E> {
        self.try_map(0, 0, |a, _| f(a))
    }

    /// Checks that each array, of `len(array)` values, holds every value a `[batch, _, seq,
    /// _]` view reads, as [`HostPositions::check_lengths`] does for host slices (for arrays
    /// whose length the caller knows, e.g. the tensors of a framework).
    pub fn check_counts(&self, batch: u64, seq: u64, len: impl Fn(&A) -> u64) -> Result<()> {
        self.as_ref()
            .try_map(batch, seq, |v, need| {
                let available = len(v);
                if available < need.count {
                    Err(Error::PositionIdsTooShort {
                        what: need.what,
                        needed: need.count,
                        available,
                    })
                } else {
                    Ok(())
                }
            })
            .map(drop)
    }

    /// Each array given to `f` with what a `[batch, _, seq, _]` view reads from it; the
    /// results in the same variant, or the first error.
    pub(crate) fn try_map<B, E>(
        self,
        batch: u64,
        seq: u64,
        f: impl FnMut(A, Need) -> std::result::Result<B, E>,
    ) -> std::result::Result<Positions<B>, E> {
        self.try_map_planes(batch, seq, 3, f)
    }

    /// [`Positions::try_map`] with `planes` position axes (3, or 4 for a fourth axis).
    pub(crate) fn try_map_planes<B, E>(
        self,
        batch: u64,
        seq: u64,
        planes: u64,
        mut f: impl FnMut(A, Need) -> std::result::Result<B, E>,
    ) -> std::result::Result<Positions<B>, E> {
        let tokens = batch.saturating_mul(seq);
        let need = |what, count| Need { what, count };
        Ok(match self {
            Positions::Start(start) => Positions::Start(start),
            Positions::BatchStarts(v) => Positions::BatchStarts(f(v, need("batch starts", batch))?),
            Positions::Ids(v) => Positions::Ids(f(v, need("position ids", tokens))?),
            Positions::Varlen {
                cu_seqlens,
                num_seqs,
                offsets,
            } => {
                let n = u64::from(num_seqs);
                Positions::Varlen {
                    // At least two values: one sequence.
                    cu_seqlens: f(cu_seqlens, need("cu_seqlens", n.max(1) + 1))?,
                    num_seqs,
                    offsets: match offsets {
                        Some(o) => Some(f(o, need("varlen offsets", n))?),
                        None => None,
                    },
                }
            }
            Positions::Axes(v) => Positions::Axes(f(
                v,
                need("M-RoPE position ids", tokens.saturating_mul(planes)),
            )?),
            Positions::Float(v) => Positions::Float(f(v, need("f32 positions", tokens))?),
            Positions::FloatAxes(v) => Positions::FloatAxes(f(
                v,
                need("f32 position axes", tokens.saturating_mul(planes)),
            )?),
        })
    }
}

impl<'a> Positions<&'a [u32]> {
    /// f32 positions from a host slice, `[batch, seq]` row-major.
    pub fn float(values: &'a [f32]) -> Self {
        Positions::Float(bytemuck::cast_slice(values))
    }

    /// Checks that f32 positions are finite with `|p| < 2^32` (the range whose angles are
    /// exact); any other positions pass.
    pub fn check_values(&self) -> Result<()> {
        if let Positions::Float(bits) | Positions::FloatAxes(bits) = self
            && let Some(&b) = bits
                .iter()
                .find(|&&b| !float_position_ok(f32::from_bits(b)))
        {
            return Err(Error::InvalidParameter {
                what: "f32 position",
                value: f64::from(f32::from_bits(b)),
                need: "finite, with |p| < 2^32 (larger ones cannot be reduced exactly)",
            });
        }
        Ok(())
    }

    /// The position of token `(b, s)` as a number, for every variant with one position a
    /// token (on `axis` for M-RoPE): [`HostPositions::position`], or the f32 value of
    /// [`Positions::Float`]. `None` where that is `None`.
    pub fn value(&self, batch: u64, seq: u64, b: u64, s: u64, axis: u64) -> Option<f64> {
        let token = b.checked_mul(seq)?.checked_add(s)?;
        match *self {
            Positions::Float(bits) => {
                let bits = *bits.get(usize::try_from(token).ok()?)?;
                Some(f64::from(f32::from_bits(bits)))
            }
            Positions::FloatAxes(bits) => {
                let plane = axis.checked_mul(batch)?.checked_mul(seq)?;
                let bits = *bits.get(usize::try_from(token.checked_add(plane)?).ok()?)?;
                Some(f64::from(f32::from_bits(bits)))
            }
            _ => self.position(batch, seq, b, s, axis).map(f64::from),
        }
    }
    /// Packed variable-length sequences from host slices: `cu_seqlens.len() - 1` sequences.
    pub fn varlen(cu_seqlens: &'a [u32], offsets: Option<&'a [u32]>) -> Self {
        let n = cu_seqlens.len().saturating_sub(1);
        Positions::Varlen {
            cu_seqlens,
            num_seqs: u32::try_from(n).unwrap_or(u32::MAX),
            offsets,
        }
    }

    /// Checks that the arrays hold every value a `[batch, _, seq, _]` view reads (per-row
    /// starts: `batch`; ids: `batch * seq`; M-RoPE axes: `3 * batch * seq`; varlen:
    /// `num_seqs + 1` (at least two) `cu_seqlens` and `num_seqs` offsets).
    pub fn check_lengths(&self, batch: u64, seq: u64) -> Result<()> {
        self.check_counts(batch, seq, |v| v.len() as u64)
    }

    /// HF's sequence length for length-dependent scalings: the largest position the view
    /// reads, plus one (0 for an empty view). The arrays must have passed
    /// [`HostPositions::check_lengths`].
    pub fn seq_len(&self, layout: &Layout, axes: u64) -> u64 {
        let [b, _, s, _] = layout.shape;
        if layout.rows_count() == 0 || layout.shape[3] == 0 {
            return 0;
        }
        let mut max = 0u64;
        for bb in 0..b {
            for ss in 0..s {
                for a in 0..axes {
                    // After check_lengths only an overflowing position is None: it counts
                    // as the largest.
                    let p = self.position(b, s, bb, ss, a).unwrap_or(u32::MAX);
                    max = max.max(u64::from(p));
                }
            }
        }
        max + 1
    }

    /// Position of token `(b, s)` of a view of `batch` rows of `seq` tokens, on `axis`
    /// (0 unless M-RoPE); `None` when the arrays lack the value (see
    /// [`HostPositions::check_lengths`]), the position would pass `u32::MAX`, or the
    /// positions are f32 ([`HostPositions::value`]).
    pub fn position(&self, batch: u64, seq: u64, b: u64, s: u64, axis: u64) -> Option<u32> {
        let at = |v: &[u32], i: Option<u64>| -> Option<u32> {
            v.get(usize::try_from(i?).ok()?).copied()
        };
        let token = b.checked_mul(seq).and_then(|t| t.checked_add(s));
        let s32 = u32::try_from(s).ok();
        match *self {
            Positions::Start(start) => start.checked_add(s32?),
            Positions::BatchStarts(starts) => at(starts, Some(b))?.checked_add(s32?),
            Positions::Ids(ids) => at(ids, token),
            Positions::Varlen {
                cu_seqlens,
                num_seqs,
                offsets,
            } => {
                // The last sequence whose start is at or before s.
                let starts = cu_seqlens.get(..usize::try_from(num_seqs).ok()?)?;
                let i = starts.iter().rposition(|&c| u64::from(c) <= s)?;
                let offset = match offsets {
                    Some(o) => *o.get(i)?,
                    None => 0,
                };
                s32?.checked_sub(cu_seqlens[i])?.checked_add(offset)
            }
            Positions::Axes(ids) => {
                let plane = axis.checked_mul(batch)?.checked_mul(seq)?;
                at(ids, token.and_then(|t| t.checked_add(plane)))
            }
            // Not integers: see `HostPositions::value`.
            Positions::Float(_) | Positions::FloatAxes(_) => None,
        }
    }
}

/// An f32 position whose angle is exact: finite, `|p| < 2^32`.
pub(crate) fn float_position_ok(p: f32) -> bool {
    p.is_finite() && p.abs() < 4_294_967_296.0
}
