//! Host side of `shaders/sinusoidal.wgsl`: the table fill and the fused add.

use super::device::Passes;
use super::pass::{EncodeReport, PairPass, PassPositions, PassView};
use super::rope::{check_contiguous_positions, resolve_positions, width_for};
use super::{Kernel, Op, Specialization};
use crate::error::{Error, Result};
use crate::positions::Positions;
use crate::spec::SinusoidalSpec;
use crate::tensor::{ArrayView, TensorView};

/// What a sinusoidal pass writes.
pub(crate) enum SinusoidalOp<'a> {
    /// The table: row `s` of every (batch, head) copy of the view gets the encoding of
    /// position `start + s`.
    Table { start: u32 },
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
        let (positions, add) = match op {
            SinusoidalOp::Table { start } => {
                check_contiguous_positions(start, x.layout.shape[2])?;
                (PassPositions::Start(start), None)
            }
            SinusoidalOp::Add { positions, scale } => {
                if !scale.is_finite() {
                    return Err(Error::InvalidParameter {
                        what: "scale",
                        value: f64::from(scale),
                        need: "a finite number",
                    });
                }
                if matches!(positions, Positions::Axes(_)) {
                    return Err(Error::PositionsMismatch(
                        "the sinusoidal encoding has one position per token, not M-RoPE axes",
                    ));
                }
                (
                    resolve_positions(positions, &x.layout, false)?.0,
                    Some(scale),
                )
            }
        };
        self.sinusoidal_pass(encoder, spec, x, positions, add)
    }

    fn sinusoidal_pass(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &SinusoidalSpec,
        x: &TensorView<'_>,
        positions: PassPositions<'_>,
        add: Option<f32>,
    ) -> Result<EncodeReport> {
        spec.validate()?;
        let layout = x.layout;
        if layout.shape[3] != spec.d_model {
            return Err(Error::DimMismatch {
                spec: spec.d_model,
                tensor: layout.shape[3],
            });
        }
        self.check_dtype(x.dtype)?;
        self.check_view(x, "tensor")?;
        if layout.rows_count() == 0 {
            // Nothing to write: a no-op that allocates nothing sized by the shape.
            return Ok(EncodeReport::default());
        }
        let pairs = spec.d_model / 2;
        let (hi, lo): (Vec<f64>, Vec<f64>) = spec
            .frequencies_dd()
            .into_iter()
            .map(|f| (f.hi, f.lo))
            .unzip();
        let inv_freq = super::rope::check_frequencies(&hi, &lo)?;
        let axes = vec![0; pairs as usize];
        let pass = PairPass {
            spec: Specialization {
                positions: positions.mode(),
                op: Op::Sinusoidal {
                    add: add.is_some(),
                    pad: spec.padding_idx.is_some(),
                },
                ..Specialization::new(
                    Kernel::Sinusoidal,
                    spec.pair_layout(),
                    width_for(&[&layout], spec.d_model),
                    x.dtype,
                )
            },
            a: PassView {
                buffer: x.buffer,
                layout,
            },
            b: None,
            pairs,
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
