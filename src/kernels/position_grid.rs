//! Host side of [`PositionGrid`]: its description uploaded as words, one dispatch of
//! `shaders/position_grid.wgsl` (one invocation a token of each batch row) into the caller's
//! array.

use super::WORKGROUP;
use super::device::Passes;
use super::input::Words;
use super::pass::{EncodeReport, fold_grid};
use super::standalone::Standalone;
use crate::error::{Error, Result};
use crate::position_grid::PositionGrid;
use crate::tensor::ArrayView;

/// The uniform of `shaders/position_grid.wgsl` (its `Params`, field for field).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    tokens: u32,
    rows: u32,
    segments: u32,
    axes: u32,
    base: u32,
    grid_x: u32,
    _pad: [u32; 2],
}

/// `shaders/position_grid.wgsl`.
pub(crate) const SOURCE: &str = include_str!("../../shaders/position_grid.wgsl");

const LABEL: &str = "wgpu-posenc position grid";

/// Where a call's values go: the binding window from the aligned offset at or below the
/// first value through the last, and the first value's index in it.
struct Window<'a> {
    buffer: &'a wgpu::Buffer,
    offset: u64,
    size: u64,
    base: u64,
}

impl Passes {
    /// Records the positions of `grid` for `batch` rows into `out`, `[axes, batch, tokens]`
    /// f32 values (their bits).
    pub(crate) fn encode_position_grid(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        grid: &PositionGrid,
        batch: u64,
        out: ArrayView<'_>,
    ) -> Result<EncodeReport> {
        grid.validate()?;
        let rows = grid.tokens().saturating_mul(batch);
        let values = rows.saturating_mul(grid.axes as u64);
        let words = super::input::words(out, values, "the position grid's output")?;
        if batch == 0 {
            return Ok(EncodeReport::default());
        }
        let window = self.grid_window(words, values)?;
        let (workgroups, [grid_x, grid_y]) = fold_grid(rows.div_ceil(WORKGROUP));
        let params = Params {
            tokens: grid.tokens() as u32,
            rows: rows as u32,
            segments: grid.segments.len() as u32,
            axes: grid.axes as u32,
            base: window.base as u32,
            grid_x,
            _pad: [0; 2],
        };
        let (uniform, description) = self.grid_buffers(&params, &grid.words())?;
        let windows = [
            (&uniform, 0, uniform.size()),
            (&description, 0, description.size()),
            (window.buffer, window.offset, window.size),
        ];
        let shader = self.grid_shader()?;
        #[cfg(feature = "capture")]
        self.capture_grid(&windows, [grid_x, grid_y, 1]);
        let bind_group = shader.bind_group(&self.device, LABEL, &windows);
        let mut cpass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(LABEL),
            timestamp_writes: None,
        });
        cpass.set_pipeline(&shader.pipeline);
        cpass.set_bind_group(0, &bind_group, &[]);
        cpass.dispatch_workgroups(grid_x, grid_y, 1);
        Ok(EncodeReport {
            dispatches: 1,
            blocks: 1,
            max_workgroups: workgroups,
        })
    }

    /// The binding window of `values` words from `words`: within one storage binding, and
    /// every index the shader computes within u32.
    fn grid_window<'a>(&self, words: Words<'a>, values: u64) -> Result<Window<'a>> {
        let offset = words.first * 4 / self.storage_align * self.storage_align;
        let base = words.first - offset / 4;
        let size = (words.first + values) * 4 - offset;
        if size > self.max_binding || base + values > u64::from(u32::MAX) {
            return Err(Error::BufferLimit {
                what: "the position grid's output",
                bytes: size,
                limit: self.max_binding.min(u64::from(u32::MAX)),
            });
        }
        Ok(Window {
            buffer: words.buffer,
            offset,
            size,
            base,
        })
    }

    /// The uniform and the description of a call: the last call's buffers where they hold
    /// the same bytes (a denoising loop over one grid), else new ones, kept for the next.
    fn grid_buffers(&self, params: &Params, words: &[u32]) -> Result<(wgpu::Buffer, wgpu::Buffer)> {
        let mut key = bytemuck::bytes_of(params).to_vec();
        key.extend_from_slice(bytemuck::cast_slice(words));
        // Under a capture every buffer is new, so that the capture holds its contents.
        #[cfg(feature = "capture")]
        let captured = self.capture.is_some();
        #[cfg(not(feature = "capture"))]
        let captured = false;
        let mut memo = self.grid_buffers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((held, uniform, description)) = memo.as_ref()
            && *held == key
            && !captured
        {
            return Ok((uniform.clone(), description.clone()));
        }
        let uniform = self.buffer_init(
            "wgpu-posenc position grid params",
            bytemuck::bytes_of(params),
            wgpu::BufferUsages::UNIFORM,
        )?;
        let description = self.buffer_init(
            LABEL,
            bytemuck::cast_slice(words),
            wgpu::BufferUsages::STORAGE,
        )?;
        *memo = Some((key, uniform.clone(), description.clone()));
        Ok((uniform, description))
    }

    /// The grid's shader, compiled on first use and shared by the clones.
    fn grid_shader(&self) -> Result<Standalone> {
        let mut slot = self.grid_pipeline.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = slot.as_ref() {
            return Ok(p.clone());
        }
        let read_only = |read_only| wgpu::BufferBindingType::Storage { read_only };
        let types = [
            wgpu::BufferBindingType::Uniform,
            read_only(true),
            read_only(false),
        ];
        let made = self.scoped("the position grid pipeline", || {
            Standalone::new(&self.device, LABEL, SOURCE, &types)
        })?;
        *slot = Some(made.clone());
        Ok(made)
    }

    /// Records the dispatch for replay elsewhere (the capture's standalone form).
    #[cfg(feature = "capture")]
    fn capture_grid(&self, windows: &[(&wgpu::Buffer, u64, u64); 3], workgroups: [u32; 3]) {
        use super::bind::{Access, Entry};
        let Some(capture) = &self.capture else {
            return;
        };
        let access = [Access::Uniform, Access::ReadOnly, Access::ReadWrite];
        let entries = windows
            .iter()
            .zip(access)
            .enumerate()
            .map(|(binding, (&(buffer, offset, size), access))| Entry {
                binding: binding as u32,
                buffer: buffer.clone(),
                offset,
                size,
                access,
            })
            .collect();
        capture.record_standalone(SOURCE, entries, workgroups);
    }
}
