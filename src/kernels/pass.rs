//! Encoding one pair pass: planning its blocks, binding a window of the tensor (and of the
//! position ids) per block, and dispatching each block's invocations.

use wgpu::util::DeviceExt;

use super::plan::{Params, PlanInput};
use super::{Specialization, WORKGROUP};
use crate::context::PosEnc;
use crate::error::{Error, Result};
use crate::tensor::Layout;

/// Where positions come from, resolved for the pass.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PassPositions<'a> {
    Start(u32),
    /// Ids `[batch, seq]`, starting at u32 index `first` of `buffer`.
    Ids {
        buffer: &'a wgpu::Buffer,
        first: u64,
    },
}

/// One pass over a validated view.
#[derive(Clone, Debug)]
pub(crate) struct PairPass<'a> {
    pub spec: Specialization,
    pub buffer: &'a wgpu::Buffer,
    pub layout: Layout,
    /// Elements each row touches from its start.
    pub row_len: u64,
    /// Angular frequency of each pair, radians per position.
    pub inv_freq: Vec<f64>,
    pub positions: PassPositions<'a>,
    pub sin_sign: f32,
    pub scale: f32,
}

/// What an encode call recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EncodeReport {
    /// Compute dispatches recorded (one per block of the view).
    pub dispatches: u32,
    /// Workgroups in the largest dispatch; above 65 535 they are folded into a 2-D grid.
    pub max_workgroups: u64,
}

impl PosEnc {
    pub(crate) fn encode_pass(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        pass: &PairPass<'_>,
    ) -> Result<EncodeReport> {
        let elem = pass.spec.dtype.size();
        let [b, h, s, _] = pass.layout.shape;
        let g = pass.spec.width.pairs();
        let groups = pass.inv_freq.len() as u64 / g;
        // Slack for aligning a window's start down and rounding its size up to 16 bytes.
        let cap_bytes = self.max_binding.saturating_sub(self.storage_align + 16);
        let input = PlanInput {
            extents: [b, h, s],
            strides: pass.layout.strides,
            row_len: pass.row_len,
            ids_seq: matches!(pass.positions, PassPositions::Ids { .. }).then_some(s),
            groups,
            cap_x: (cap_bytes / elem).min(u32::MAX as u64),
            cap_ids: (cap_bytes / 4).min(u32::MAX as u64),
            // Keeps every per-dispatch count well inside u32.
            max_invocations: 1 << 30,
        };
        let blocks = input.blocks().ok_or(Error::ShapeOverflow {
            shape: pass.layout.shape,
            strides: pass.layout.strides,
            limit: "one storage binding",
        })?;
        if blocks.is_empty() {
            return Ok(EncodeReport::default());
        }

        let pipeline = self.pipeline(pass.spec);
        let freq =
            self.frequency_buffer(crate::angle::pack_frequencies(&pass.inv_freq, g as usize));
        let param_stride = (size_of::<Params>() as u64).next_multiple_of(self.uniform_align);
        let mut uniform = vec![0u8; (param_stride * blocks.len() as u64) as usize];
        let mut windows = Vec::with_capacity(blocks.len());
        let mut report = EncodeReport {
            dispatches: 0,
            max_workgroups: 0,
        };
        for (k, blk) in blocks.iter().enumerate() {
            let stepped = |i: usize| {
                if blk.extent[i] > 1 {
                    pass.layout.strides[i]
                } else {
                    0
                }
            };
            let first = pass.layout.offset
                + (0..3)
                    .map(|i| blk.start[i] * pass.layout.strides[i])
                    .sum::<u64>();
            let x = self.window(pass.buffer, first * elem, input.span(blk.extent) * elem);
            let (ids, ids_base, pos_start) = match pass.positions {
                PassPositions::Start(start) => (None, 0, start + blk.start[2] as u32),
                PassPositions::Ids { buffer, first } => {
                    let at = first + blk.start[0] * s + blk.start[2];
                    let w = self.window(buffer, at * 4, input.ids_span(blk.extent) * 4);
                    let base = (at * 4 - w.0) / 4;
                    (Some((buffer, w)), base as u32, 0)
                }
            };
            let total = blk.extent[0] * blk.extent[2] * groups;
            let workgroups = total.div_ceil(WORKGROUP);
            let grid_x = workgroups.min(65_535);
            let grid_y = workgroups.div_ceil(grid_x);
            let params = Params {
                base: ((first * elem - x.0) / elem) as u32,
                stride_b: stepped(0) as u32,
                stride_h: stepped(1) as u32,
                stride_s: stepped(2) as u32,
                n_b: blk.extent[0] as u32,
                n_h: blk.extent[1] as u32,
                n_s: blk.extent[2] as u32,
                groups: groups as u32,
                half: (pass.row_len / 2) as u32,
                pos_start,
                ids_base,
                ids_stride_b: s as u32,
                total: total as u32,
                grid_x: grid_x as u32,
                sin_sign: pass.sin_sign,
                scale: pass.scale,
            };
            let at = k * param_stride as usize;
            uniform[at..at + size_of::<Params>()].copy_from_slice(bytemuck::bytes_of(&params));
            windows.push((x, ids, [grid_x as u32, grid_y as u32]));
            report.dispatches += 1;
            report.max_workgroups = report.max_workgroups.max(workgroups);
        }
        let uniform = self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("wgpu-posenc params"),
                contents: &uniform,
                usage: wgpu::BufferUsages::UNIFORM,
            });
        let bind_groups: Vec<wgpu::BindGroup> = windows
            .iter()
            .enumerate()
            .map(|(k, (x, ids, _))| {
                let binding = |buffer, (offset, size): (u64, u64)| {
                    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer,
                        offset,
                        size: wgpu::BufferSize::new(size),
                    })
                };
                let ids = match ids {
                    Some((buffer, w)) => binding(buffer, *w),
                    None => self.no_ids.as_entire_binding(),
                };
                self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("wgpu-posenc pair pass"),
                    layout: &self.bind_group_layout,
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: binding(
                                &uniform,
                                (k as u64 * param_stride, size_of::<Params>() as u64),
                            ),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: binding(pass.buffer, *x),
                        },
                        wgpu::BindGroupEntry {
                            binding: 2,
                            resource: freq.as_entire_binding(),
                        },
                        wgpu::BindGroupEntry {
                            binding: 3,
                            resource: ids,
                        },
                    ],
                })
            })
            .collect();

        let mut cpass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("wgpu-posenc"),
            timestamp_writes: None,
        });
        cpass.set_pipeline(&pipeline);
        for (bind_group, (_, _, [gx, gy])) in bind_groups.iter().zip(&windows) {
            cpass.set_bind_group(0, bind_group, &[]);
            cpass.dispatch_workgroups(*gx, *gy, 1);
        }
        Ok(report)
    }

    /// A binding window `(offset, size)` of `buffer` covering bytes `[start, start + len)`:
    /// the offset aligned down to the storage alignment, the size rounded up to 16 bytes
    /// (whole vec4s) but not past the buffer's end.
    fn window(&self, buffer: &wgpu::Buffer, start: u64, len: u64) -> (u64, u64) {
        let offset = start / self.storage_align * self.storage_align;
        let end = (start + len)
            .next_multiple_of(16)
            .min(buffer.size() / 4 * 4);
        (offset, end - offset)
    }
}
