//! Host side of `shaders/sinusoidal.wgsl`: the table fill and the fused add.

use super::device::Passes;
use super::input::{Reads, resolve_positions};
use super::pass::{EncodeReport, PairPass, PassPositions, PassView};
use super::rope::width_for;
use super::{Kernel, Op, Specialization, Width};
use crate::angle;
use crate::dd::Dd;
use crate::error::{Error, Result};
use crate::positions::Positions;
use crate::sinusoid::SinusoidalSpec;
use crate::tensor::{ArrayView, TensorView};

/// What a sinusoidal pass writes.
pub(crate) enum SinusoidalOp<'a> {
    /// The table: row `s` of batch row `b` (in every head) gets the encoding of token
    /// `(b, s)`'s position (`start + s` for contiguous positions).
    Table { positions: Positions<ArrayView<'a>> },
    /// `x = x * scale + PE` over embeddings at `positions`.
    Add {
        positions: Positions<ArrayView<'a>>,
        scale: f32,
    },
}

impl Passes {
    /// Records the sinusoidal operation `op` over `x` (rows of `d_model`).
    pub(crate) fn encode_sinusoidal(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &SinusoidalSpec,
        x: &TensorView<'_>,
        op: SinusoidalOp<'_>,
    ) -> Result<EncodeReport> {
        self.encode_sinusoidal_block(encoder, spec, x, op, spec.pairs())
    }

    /// [`Passes::encode_sinusoidal`] with each cosine `cos_offset` columns after its sine in
    /// a concatenated spec (a sin-cos grid block; rows of `cos_offset + pairs` elements, the
    /// columns between the sines and the cosines left alone).
    pub(crate) fn encode_sinusoidal_block(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &SinusoidalSpec,
        x: &TensorView<'_>,
        op: SinusoidalOp<'_>,
        cos_offset: u64,
    ) -> Result<EncodeReport> {
        let (positions, add) = match op {
            SinusoidalOp::Table { positions } => (positions, None),
            SinusoidalOp::Add { positions, scale } => {
                if !scale.is_finite() {
                    return Err(Error::InvalidParameter {
                        what: "scale",
                        value: f64::from(scale),
                        need: "a finite number",
                    });
                }
                (positions, Some(scale))
            }
        };
        if spec.padding_idx.is_some() && matches!(positions, Positions::Float(_)) {
            return Err(Error::PositionsMismatch(
                "a padding index is an integer position: f32 positions cannot name it",
            ));
        }
        let positions = resolve_positions(positions, &x.layout, Reads::Sinusoidal)?.0;
        self.sinusoidal_pass(encoder, spec, x, positions, add, cos_offset)
    }

    fn sinusoidal_pass(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &SinusoidalSpec,
        x: &TensorView<'_>,
        positions: PassPositions<'_>,
        add: Option<f32>,
        cos_offset: u64,
    ) -> Result<EncodeReport> {
        spec.validate()?;
        let layout = x.layout;
        // A grid block's row ends with its last cosine.
        let width = spec.d_model - 2 * spec.pairs() + cos_offset + spec.pairs();
        if layout.shape[3] != width {
            return Err(Error::DimMismatch {
                spec: width,
                tensor: layout.shape[3],
            });
        }
        self.check_dtype(x.dtype)?;
        self.check_view(x, "tensor")?;
        if layout.rows_count() == 0 {
            // Nothing to write: a no-op that allocates nothing sized by the shape.
            return Ok(EncodeReport::default());
        }
        let pairs = spec.pairs();
        let (hi, lo): (Vec<f64>, Vec<f64>) = spec
            .frequencies_dd()
            .into_iter()
            .map(|f| (f.hi, f.lo))
            .unzip();
        let inv_freq = crate::angle::check_frequencies(&hi, &lo)?;
        // The third frequency word: M-RoPE's axis for RoPE, unused by the sinusoidal kernel at
        // u32 positions; at f32 positions, the whole revolutions of each frequency.
        let axes = if matches!(positions, Positions::Float(_)) {
            whole_revolutions(&inv_freq)?
        } else {
            vec![0; pairs as usize]
        };
        let pass = PairPass {
            spec: Specialization {
                positions: positions.mode(),
                op: Op::Sinusoidal {
                    add: add.is_some(),
                    pad: spec.padding_idx.is_some(),
                    flip: spec.cos_first(),
                },
                ..Specialization::new(
                    Kernel::Sinusoidal,
                    spec.pair_layout(),
                    // Four pairs a lane need a lane's sines and cosines in whole vec4s: a grid
                    // block's cosine distance a multiple of 4 too.
                    if cos_offset.is_multiple_of(4) {
                        width_for(&[&layout], spec.d_model)
                    } else {
                        Width::X1
                    },
                    x.dtype,
                )
            },
            a: PassView {
                buffer: x.buffer,
                layout,
            },
            b: None,
            pairs,
            half: cos_offset,
            block: 0,
            dense_heads: 0,
            inv_freq: &inv_freq,
            axes: &axes,
            positions,
            cache: None,
            pad_pos: spec.padding_idx,
            sin_sign: 1.0,
            scale: add.unwrap_or(1.0),
        };
        self.encode_pass(encoder, &pass)
    }
}

/// The whole revolutions per position of each frequency, for f32 positions: refused from 2^32
/// revolutions (`2pi 2^32` rad) up, where an f32 position's share of them no longer fits the
/// kernel's words.
fn whole_revolutions(inv_freq: &[Dd]) -> Result<Vec<u32>> {
    inv_freq
        .iter()
        .map(|&f| {
            angle::whole_revolutions(f).ok_or(Error::InvalidParameter {
                what: "frequency (radians per position) at f32 positions",
                value: f.hi,
                need: "below 2pi 2^32 (2.7e10): check the frequency scale",
            })
        })
        .collect()
}
