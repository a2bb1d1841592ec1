//! Host side of [`PositionGrid`]: its description uploaded as words, one dispatch of
//! `shaders/position_grid.wgsl` (one invocation a token of each batch row) into the caller's
//! array.

use super::WORKGROUP;
use super::device::Passes;
use super::pass::{EncodeReport, fold_grid};
use crate::error::{Error, Result};
use crate::position_grid::PositionGrid;
use crate::tensor::ArrayView;

/// The uniform of `shaders/position_grid.wgsl`.
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

/// The grid kernel's bind group layout and pipeline, built on first use.
#[derive(Clone, Debug)]
pub(crate) struct GridPipeline {
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::ComputePipeline,
}

impl GridPipeline {
    fn new(device: &wgpu::Device) -> Self {
        let entry = |binding, ty| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let label = Some("wgpu-posenc position grid");
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label,
            entries: &[
                entry(0, wgpu::BufferBindingType::Uniform),
                entry(1, wgpu::BufferBindingType::Storage { read_only: true }),
                entry(2, wgpu::BufferBindingType::Storage { read_only: false }),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label,
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label,
            source: wgpu::ShaderSource::Wgsl(SOURCE.into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label,
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        Self { layout, pipeline }
    }
}

/// `shaders/position_grid.wgsl`.
pub(crate) const SOURCE: &str = include_str!("../../shaders/position_grid.wgsl");

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
        let what = "the position grid's output";
        let rows = grid.tokens().saturating_mul(batch);
        let values = rows.saturating_mul(grid.axes as u64);
        let words = super::input::words(out, values, what)?;
        if batch == 0 {
            return Ok(EncodeReport::default());
        }
        // The window from the aligned offset below the first value through the last.
        let start = words.first * 4 / self.storage_align * self.storage_align;
        let base = words.first - start / 4;
        let size = (words.first + values) * 4 - start;
        if size > self.max_binding || base + values > u64::from(u32::MAX) {
            return Err(Error::BufferLimit {
                what,
                bytes: size,
                limit: self.max_binding.min(u64::from(u32::MAX)),
            });
        }
        let pipeline = self.grid_pipeline()?;
        let (workgroups, [grid_x, grid_y]) = fold_grid(rows.div_ceil(WORKGROUP));
        let params = Params {
            tokens: grid.tokens() as u32,
            rows: rows as u32,
            segments: grid.segments.len() as u32,
            axes: grid.axes as u32,
            base: base as u32,
            grid_x,
            _pad: [0; 2],
        };
        let uniform = self.buffer_init(
            "wgpu-posenc position grid params",
            bytemuck::bytes_of(&params),
            wgpu::BufferUsages::UNIFORM,
        )?;
        let description = self.buffer_init(
            "wgpu-posenc position grid",
            bytemuck::cast_slice(&grid.words()),
            wgpu::BufferUsages::STORAGE,
        )?;
        #[cfg(feature = "capture")]
        if let Some(capture) = &self.capture {
            use super::bind::{Access, Entry};
            let entry = |binding, buffer: &wgpu::Buffer, offset, size, access| Entry {
                binding,
                buffer: buffer.clone(),
                offset,
                size,
                access,
            };
            let entries = vec![
                entry(0, &uniform, 0, uniform.size(), Access::Uniform),
                entry(1, &description, 0, description.size(), Access::ReadOnly),
                entry(2, words.buffer, start, size, Access::ReadWrite),
            ];
            capture.record_standalone(SOURCE, entries, [grid_x, grid_y, 1]);
        }
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("wgpu-posenc position grid"),
            layout: &pipeline.layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: uniform.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: description.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: words.buffer,
                        offset: start,
                        size: wgpu::BufferSize::new(size),
                    }),
                },
            ],
        });
        let mut cpass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("wgpu-posenc position grid"),
            timestamp_writes: None,
        });
        cpass.set_pipeline(&pipeline.pipeline);
        cpass.set_bind_group(0, &bind_group, &[]);
        cpass.dispatch_workgroups(grid_x, grid_y, 1);
        Ok(EncodeReport {
            dispatches: 1,
            blocks: 1,
            max_workgroups: workgroups,
        })
    }

    /// The grid pipeline, compiled on first use and shared by the clones.
    fn grid_pipeline(&self) -> Result<GridPipeline> {
        let mut slot = self.grid_pipeline.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = slot.as_ref() {
            return Ok(p.clone());
        }
        let made = self.scoped("the position grid pipeline", || {
            GridPipeline::new(&self.device)
        })?;
        *slot = Some(made.clone());
        Ok(made)
    }
}
