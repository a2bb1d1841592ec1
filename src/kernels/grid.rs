//! Host side of [`SincosGrid`]: the zero rows and each axis's block as sinusoidal passes over
//! column views of one tensor, at the block's f32 coordinates.

use super::device::Passes;
use super::pass::EncodeReport;
use super::sinusoidal::SinusoidalOp;
use crate::error::{Error, Result};
use crate::grid::SincosGrid;
use crate::positions::Positions;
use crate::sinusoid::SinusoidalSpec;
use crate::tensor::{ArrayView, Layout, TensorView};

impl Passes {
    /// Records the grid's table into `x` (`[batch, heads, zero_rows + tokens, dim]`, every
    /// (batch, head) copy the same rows), or `x = x * scale + PE` with `add`.
    pub(crate) fn encode_sincos_grid(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        grid: &SincosGrid,
        x: &TensorView<'_>,
        add: Option<f32>,
    ) -> Result<EncodeReport> {
        grid.validate()?;
        let [nb, nh, ns, d] = x.layout.shape;
        if d != grid.dim || ns != grid.rows() {
            return Err(Error::ShapeMismatch {
                what: "the tensor must be [batch, heads, zero rows + grid tokens, dim]",
                a: x.layout.shape,
                b: [nb, nh, grid.rows(), grid.dim],
            });
        }
        let view = |offset: u64, seq: u64, width: u64| TensorView {
            layout: Layout {
                offset,
                shape: [nb, nh, seq, width],
                ..x.layout
            },
            ..*x
        };
        let mut report = EncodeReport::default();
        if grid.zero_rows > 0 {
            // Every zero row at the padding index: zeros, or x * scale.
            let zeros = vec![0u32; (nb * grid.zero_rows) as usize];
            let ids = self.words_buffer(&zeros)?;
            let spec = SinusoidalSpec::new(d).padding_idx(0);
            let rows = view(x.layout.offset, grid.zero_rows, d);
            let positions = Positions::Ids(ArrayView::new(&ids));
            report =
                report.merge(self.encode_sinusoidal(encoder, &spec, &rows, op(positions, add))?);
        }
        let first = x.layout.offset + grid.zero_rows * x.layout.strides[2];
        for block in &grid.blocks {
            // The coordinates of every batch row: `[batch, tokens]`.
            let bits: Vec<u32> = (0..nb)
                .flat_map(|_| block.coords.iter().map(|c| c.to_bits()))
                .collect();
            let coords = self.words_buffer(&bits)?;
            let cols = view(first + block.first, grid.tokens(), block.span());
            let positions = Positions::Float(ArrayView::new(&coords));
            let pass = self.encode_sinusoidal_block(
                encoder,
                &block.spec(),
                &cols,
                op(positions, add),
                block.cos_offset,
            )?;
            report = report.merge(pass);
        }
        Ok(report)
    }

    /// A STORAGE buffer of `words` (one word at least: a binding cannot be empty).
    fn words_buffer(&self, words: &[u32]) -> Result<wgpu::Buffer> {
        let words = if words.is_empty() { &[0][..] } else { words };
        self.buffer_init(
            "wgpu-posenc grid positions",
            bytemuck::cast_slice(words),
            wgpu::BufferUsages::STORAGE,
        )
    }
}

/// The table, or the add with its scale, at `positions`.
fn op(positions: Positions<ArrayView<'_>>, add: Option<f32>) -> SinusoidalOp<'_> {
    match add {
        Some(scale) => SinusoidalOp::Add { positions, scale },
        None => SinusoidalOp::Table { positions },
    }
}
