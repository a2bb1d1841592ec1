//! Host side of `shaders/rope.wgsl`: validation and the pass for RoPE in place.

use super::pass::{EncodeReport, PairPass, PassPositions};
use super::{Kernel, Specialization, Width};
use crate::context::PosEnc;
use crate::error::{Error, Result};
use crate::spec::RopeSpec;
use crate::tensor::{Layout, Positions, TensorView};

impl PosEnc {
    /// Records RoPE in place over `tensor` into `encoder` (nothing is submitted).
    ///
    /// Every pair of the first `r` elements of each `(batch, head, token)` row is rotated by
    /// `position * f_j`; elements `[r, head_dim)` and everything outside the view are left
    /// as they are. Positions are contiguous from a start, or explicit ids of shape
    /// `[batch, seq]`.
    pub fn encode_rope(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &RopeSpec,
        tensor: &TensorView<'_>,
        positions: Positions<'_>,
    ) -> Result<EncodeReport> {
        let layout = tensor.layout;
        let r = spec.validate(layout.shape[3])?;
        self.check_dtype(tensor.dtype)?;
        self.check_view(tensor, "tensor")?;
        let [b, _, s, _] = layout.shape;
        let (positions, seq_len) = match positions {
            Positions::Start(start) => {
                check_contiguous_positions(start, s)?;
                (PassPositions::Start(start), u64::from(start) + s)
            }
            Positions::Ids { buffer, offset } => {
                check_ids(buffer, offset, b * s)?;
                (
                    PassPositions::Ids {
                        buffer,
                        first: offset / 4,
                    },
                    s,
                )
            }
        };
        let r32 = u32::try_from(r).map_err(|_| Error::InvalidRotaryDim {
            rotary_dim: r,
            head_dim: layout.shape[3],
        })?;
        let freqs =
            spec.scaling
                .frequencies(r32, spec.base, spec.scaling_seq_len.unwrap_or(seq_len))?;
        let pass = PairPass {
            spec: Specialization {
                kernel: Kernel::Rope,
                pair_layout: spec.pair_layout,
                width: width_for(&layout, r),
                dtype: tensor.dtype,
                flag: matches!(positions, PassPositions::Ids { .. }),
            },
            buffer: tensor.buffer,
            layout,
            row_len: r,
            inv_freq: freqs.inv_freq,
            positions,
            sin_sign: if spec.inverse { -1.0 } else { 1.0 },
            scale: freqs.attention_factor as f32,
        };
        self.encode_pass(encoder, &pass)
    }

    /// Checks a view's buffer usage and size; returns the bytes it needs.
    pub(crate) fn check_view(&self, tensor: &TensorView<'_>, what: &'static str) -> Result<u64> {
        let usage = tensor.buffer.usage();
        if !usage.contains(wgpu::BufferUsages::STORAGE) {
            return Err(Error::MissingUsage {
                what,
                missing: wgpu::BufferUsages::STORAGE,
            });
        }
        let layout = &tensor.layout;
        let needed = layout
            .end()?
            .checked_mul(tensor.dtype.size())
            .ok_or(Error::ShapeOverflow {
                shape: layout.shape,
                strides: layout.strides,
                limit: "u64",
            })?
            .next_multiple_of(4);
        if needed > tensor.buffer.size() {
            return Err(Error::BufferTooSmall {
                what,
                needed,
                size: tensor.buffer.size(),
            });
        }
        Ok(needed)
    }
}

/// Vec4 access needs whole groups of 4 pairs (8 elements of a row) and every row start on a
/// multiple of 4 elements; otherwise the scalar variant runs.
pub(crate) fn width_for(layout: &Layout, row_len: u64) -> Width {
    let aligned = layout.offset.is_multiple_of(4)
        && (0..3).all(|i| layout.shape[i] <= 1 || layout.strides[i].is_multiple_of(4));
    if row_len.is_multiple_of(8) && aligned {
        Width::X4
    } else {
        Width::X1
    }
}

/// `start + seq - 1` must be a u32 position.
pub(crate) fn check_contiguous_positions(start: u32, seq: u64) -> Result<()> {
    if seq > 0 && u64::from(start) + seq - 1 > u64::from(u32::MAX) {
        return Err(Error::PositionOverflow {
            start: u64::from(start),
            seq,
        });
    }
    Ok(())
}

fn check_ids(buffer: &wgpu::Buffer, offset: u64, needed: u64) -> Result<()> {
    if !buffer.usage().contains(wgpu::BufferUsages::STORAGE) {
        return Err(Error::MissingUsage {
            what: "position-id buffer",
            missing: wgpu::BufferUsages::STORAGE,
        });
    }
    if !offset.is_multiple_of(4) {
        return Err(Error::MisalignedOffset {
            what: "position-id buffer",
            offset,
            elem: 4,
        });
    }
    let available = buffer.size().saturating_sub(offset) / 4;
    if available < needed {
        return Err(Error::PositionIdsTooShort { needed, available });
    }
    Ok(())
}
