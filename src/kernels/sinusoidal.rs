//! Host side of `shaders/sinusoidal.wgsl`: the table fill and the fused add.

use super::pass::{EncodeReport, PairPass, PassPositions, PassView};
use super::passes::Passes;
use super::rope::{check_contiguous_positions, resolve_positions, width_for};
use super::{Kernel, Op, Specialization};
use crate::error::{Error, Result};
use crate::positions::Positions;
use crate::spec::SinusoidalSpec;
use crate::tensor::{ArrayView, TensorView};

impl Passes {
    /// Records the sinusoidal table into `table` (rows of `d_model`, e.g. [`Layout::rows`]):
    /// row `s` gets the encoding of position `start + s`. Every (batch, head) copy of the view
    /// gets the same rows.
    ///
    /// [`Layout::rows`]: crate::Layout::rows
    pub(crate) fn encode_sinusoidal_table(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &SinusoidalSpec,
        table: &TensorView<'_>,
        start: u32,
    ) -> Result<EncodeReport> {
        check_contiguous_positions(start, table.layout.shape[2])?;
        self.sinusoidal_pass(encoder, spec, table, PassPositions::Start(start), None)
    }

    /// Records the fused `x = x * scale + PE` over embeddings `x` (e.g. [`Layout::bsd`]) at
    /// `positions` (a start, per-row starts, or ids; fairseq maps padding tokens to its
    /// padding index). The original Transformer uses `scale = sqrt(d_model)`.
    ///
    /// [`Layout::bsd`]: crate::Layout::bsd
    pub(crate) fn encode_sinusoidal_add(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &SinusoidalSpec,
        x: &TensorView<'_>,
        positions: Positions<ArrayView<'_>>,
        scale: f32,
    ) -> Result<EncodeReport> {
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
        let (positions, _) = resolve_positions(positions, &x.layout, false)?;
        self.sinusoidal_pass(encoder, spec, x, positions, Some(scale))
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
