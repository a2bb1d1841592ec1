//! Host side of `shaders/sinusoidal.wgsl`: the table fill and the fused add.

use super::pass::{EncodeReport, PairPass, PassPositions};
use super::rope::{check_contiguous_positions, width_for};
use super::{Kernel, Specialization};
use crate::context::PosEnc;
use crate::error::{Error, Result};
use crate::frequencies::default_inv_freq;
use crate::spec::SinusoidalSpec;
use crate::tensor::TensorView;

impl PosEnc {
    /// Records the sinusoidal table into `table` (rows of `d_model`, e.g. [`Layout::rows`]):
    /// row `s` gets the encoding of position `start + s`. Every (batch, head) copy of the view
    /// gets the same rows.
    ///
    /// [`Layout::rows`]: crate::Layout::rows
    pub fn encode_sinusoidal_table(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &SinusoidalSpec,
        table: &TensorView<'_>,
        start: u32,
    ) -> Result<EncodeReport> {
        self.sinusoidal_pass(encoder, spec, table, start, None)
    }

    /// Records the fused `x = x * scale + PE` over embeddings `x` (e.g. [`Layout::bsd`]),
    /// token `s` at position `start + s`. The original Transformer uses `scale = sqrt(d_model)`.
    ///
    /// [`Layout::bsd`]: crate::Layout::bsd
    pub fn encode_sinusoidal_add(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &SinusoidalSpec,
        x: &TensorView<'_>,
        start: u32,
        scale: f32,
    ) -> Result<EncodeReport> {
        if !scale.is_finite() {
            return Err(Error::InvalidParameter {
                what: "scale",
                value: f64::from(scale),
                need: "a finite number",
            });
        }
        self.sinusoidal_pass(encoder, spec, x, start, Some(scale))
    }

    fn sinusoidal_pass(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &SinusoidalSpec,
        x: &TensorView<'_>,
        start: u32,
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
        check_contiguous_positions(start, layout.shape[2])?;
        let d32 = u32::try_from(spec.d_model).map_err(|_| Error::InvalidDModel {
            d_model: spec.d_model,
        })?;
        let pass = PairPass {
            spec: Specialization {
                kernel: Kernel::Sinusoidal,
                pair_layout: spec.pair_layout(),
                width: width_for(&layout, spec.d_model),
                dtype: x.dtype,
                flag: add.is_some(),
            },
            buffer: x.buffer,
            layout,
            row_len: spec.d_model,
            inv_freq: default_inv_freq(d32, spec.base),
            positions: PassPositions::Start(start),
            sin_sign: 1.0,
            scale: add.unwrap_or(1.0),
        };
        self.encode_pass(encoder, &pass)
    }
}
