//! The roofline of an adapter: what a memory-bound kernel can reach on it, measured by a
//! kernel that does nothing but move the same bytes.
//!
//! RoPE and the fused sinusoidal add read every element once and write it once, so their
//! limit is the adapter's bandwidth through the compute path, not its arithmetic. That limit
//! differs between adapters and drivers, and only a measurement in the same run makes a
//! kernel's figure mean something:
//!
//! - [`Roofline::encode_identity`] records an in-place identity over a byte range of a
//!   buffer (`shaders/identity.wgsl`): vec4 loads and stores, 64-thread workgroups, more than
//!   65 535 workgroups folded into a 2-D grid, and ranges larger than one storage binding
//!   split into several bindings, as the pair kernels do. Its bytes per second are the
//!   roofline a kernel's rate is compared with.
//! - [`Roofline::encode_empty_dispatch`] records one dispatch that touches no memory: the floor
//!   of the latency of a small kernel, such as RoPE over one decoded token.
//! - [`Timer`] times recorded work: GPU timestamps where the device has
//!   [`wgpu::Features::TIMESTAMP_QUERY`], wall time around a submit and a full wait otherwise.
//!
//! `copy_buffer_to_buffer` is another reference worth measuring beside these (see the
//! `throughput` example), but a copy runs outside the compute path (on Mesa's CPU drivers it
//! is a `memcpy` on the queue's thread) and can be faster than any shader.
//!
//! ```no_run,ignore-wasm32
//! use wgpu_posenc::PosEnc;
//! use wgpu_posenc::roofline::{Roofline, Timer};
//! let ctx = PosEnc::with_default_adapter()?;
//! let roofline = Roofline::new(&ctx);
//! let bytes = 256 << 20;
//! let buffer = ctx.device().create_buffer(&wgpu::BufferDescriptor {
//!     label: None,
//!     size: bytes,
//!     usage: wgpu::BufferUsages::STORAGE,
//!     mapped_at_creation: false,
//! });
//! let timer = Timer::new(&ctx);
//! let seconds = timer.time(&ctx, |encoder| {
//!     roofline.encode_identity(encoder, &buffer, 0, bytes).map(drop)
//! })?;
//! // Read once and written once.
//! println!("{:.1} GB/s ({})", 2.0 * bytes as f64 / seconds / 1e9, timer.kind());
//! # Ok::<(), wgpu_posenc::Error>(())
//! ```

#[cfg(not(target_arch = "wasm32"))]
use std::time::Instant;
// The browser's clock (`performance.now()`): std has none on wasm32-unknown-unknown.
#[cfg(target_arch = "wasm32")]
use web_time::Instant;

use bytemuck::{Pod, Zeroable};
use wgpu::util::DeviceExt;

use crate::context::PosEnc;
use crate::error::{Error, Result};
use crate::kernels::WORKGROUP;
use crate::kernels::pass::{EncodeReport, fold_grid};
use crate::kernels::standalone::Standalone;

/// The uniform block of `shaders/identity.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct Params {
    base: u32,
    count: u32,
    grid_x: u32,
    mask: u32,
}

/// Bytes in one vec4 word: the identity moves whole words.
const WORD: u64 = 16;

/// Planes of `shaders/identity.wgsl`: lines each invocation moves.
const PLANES: u64 = 4;

/// Splits `words` vec4 words from byte `byte_offset` into dispatches that each fit one
/// storage binding of `max_binding` bytes (its start aligned down to `align`) and 2^30
/// invocations: `(first byte, words)` per dispatch, of equal sizes but the last.
fn identity_ranges(byte_offset: u64, words: u64, max_binding: u64, align: u64) -> Vec<(u64, u64)> {
    // Every range starts `byte_offset % align` bytes past an aligned offset: keep range sizes
    // multiples of the alignment (and of a line) so that this holds for all of them.
    let unit = (align / WORD).max(4);
    let misalign = byte_offset % align;
    let cap = ((max_binding.saturating_sub(misalign) / WORD) / unit * unit)
        .min((1 << 30) / unit * unit)
        .max(unit);
    let count = words.div_ceil(cap).max(1);
    let size = words.div_ceil(count).next_multiple_of(unit).min(cap);
    let mut ranges = Vec::new();
    let mut done = 0;
    while done < words {
        let n = size.min(words - done);
        ranges.push((byte_offset + done * WORD, n));
        done += n;
    }
    ranges
}

/// The identity shader and the empty dispatch on a context's device: build it once, and
/// record either as often as needed.
#[derive(Clone, Debug)]
pub struct Roofline {
    ctx: PosEnc,
    /// The identity shader's layout and pipeline.
    shader: Standalone,
    /// One word of storage and a uniform with `count == 0`: the empty dispatch's bindings.
    empty: wgpu::BindGroup,
}

impl Roofline {
    /// The identity pipeline and the empty dispatch's bindings on `ctx`'s device.
    pub fn new(ctx: &PosEnc) -> Self {
        let device = ctx.device();
        let shader = Standalone::new(
            device,
            "wgpu-posenc identity",
            include_str!("../shaders/identity.wgsl"),
            &[
                wgpu::BufferBindingType::Uniform,
                wgpu::BufferBindingType::Storage { read_only: false },
            ],
        );
        let params = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("wgpu-posenc empty dispatch"),
            contents: bytemuck::bytes_of(&Params::default()),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let word = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgpu-posenc empty dispatch"),
            size: WORD,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let empty = shader.bind_group(
            device,
            "wgpu-posenc empty dispatch",
            &[(&params, 0, params.size()), (&word, 0, WORD)],
        );
        Self {
            ctx: ctx.clone(),
            shader,
            empty,
        }
    }

    /// Records an in-place identity over bytes `[byte_offset, byte_offset + bytes)` of
    /// `buffer` (nothing is submitted): every 16-byte word is read and written back
    /// unchanged, so `2 * bytes` move through the compute path.
    ///
    /// The dispatch has the kernels' shape: vec4 loads and stores, 64-thread workgroups, more
    /// than 65 535 workgroups folded into a 2-D grid, and a range larger than one storage
    /// binding split into one dispatch per binding. Each invocation moves one 64-byte line
    /// in each of four equal planes of the range, as a pair kernel moves the same pairs in
    /// every head (see `shaders/identity.wgsl`). Both `byte_offset` and `bytes` must be
    /// multiples of 16; the buffer needs `STORAGE` usage.
    pub fn encode_identity(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffer: &wgpu::Buffer,
        byte_offset: u64,
        bytes: u64,
    ) -> Result<EncodeReport> {
        check_identity_range(buffer, byte_offset, bytes)?;
        if bytes == 0 {
            return Ok(EncodeReport::default());
        }
        let roofline = self;
        let passes = self.ctx.passes();
        let param_stride = (size_of::<Params>() as u64).next_multiple_of(passes.uniform_align);
        let mut uniform = Vec::new();
        let mut windows = Vec::new();
        let mut report = EncodeReport::default();
        for (first, words) in identity_ranges(
            byte_offset,
            bytes / WORD,
            passes.max_binding,
            passes.storage_align,
        ) {
            let offset = first / passes.storage_align * passes.storage_align;
            // One invocation per line of a plane, and at least one per tail line and word.
            let invocations = (words / 4).div_ceil(PLANES).max(4);
            let (workgroups, [grid_x, grid_y]) = fold_grid(invocations.div_ceil(WORKGROUP));
            let params = Params {
                base: ((first - offset) / WORD) as u32,
                count: words as u32,
                grid_x,
                mask: 0,
            };
            uniform.resize(windows.len() * param_stride as usize, 0);
            uniform.extend_from_slice(bytemuck::bytes_of(&params));
            windows.push((offset, first + words * WORD - offset, grid_x, grid_y));
            report.dispatches += 1;
            report.blocks += 1;
            report.max_workgroups = report.max_workgroups.max(workgroups);
        }
        let uniform = passes
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("wgpu-posenc identity params"),
                contents: &uniform,
                usage: wgpu::BufferUsages::UNIFORM,
            });
        let bind_groups: Vec<wgpu::BindGroup> = windows
            .iter()
            .enumerate()
            .map(|(k, &(offset, size, _, _))| {
                let params = (
                    &uniform,
                    k as u64 * param_stride,
                    size_of::<Params>() as u64,
                );
                self.bind_group(params, (buffer, offset, size))
            })
            .collect();
        let mut cpass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("wgpu-posenc identity"),
            timestamp_writes: None,
        });
        cpass.set_pipeline(&roofline.shader.pipeline);
        for (bind_group, &(_, _, gx, gy)) in bind_groups.iter().zip(&windows) {
            cpass.set_bind_group(0, bind_group, &[]);
            cpass.dispatch_workgroups(gx, gy, 1);
        }
        Ok(report)
    }

    /// The identity's bind group: a window `(buffer, offset, size)` of the parameters and
    /// one of the data.
    fn bind_group(
        &self,
        params: (&wgpu::Buffer, u64, u64),
        data: (&wgpu::Buffer, u64, u64),
    ) -> wgpu::BindGroup {
        self.shader
            .bind_group(self.ctx.device(), "wgpu-posenc identity", &[params, data])
    }

    /// Records one dispatch of one workgroup that returns at once and touches no memory
    /// (nothing is submitted): the floor of what any dispatch costs on this queue, to compare
    /// the latency of a small kernel with. Its bindings are created once and reused.
    pub fn encode_empty_dispatch(&self, encoder: &mut wgpu::CommandEncoder) -> EncodeReport {
        let roofline = self;
        let mut cpass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("wgpu-posenc empty dispatch"),
            timestamp_writes: None,
        });
        cpass.set_pipeline(&roofline.shader.pipeline);
        cpass.set_bind_group(0, &roofline.empty, &[]);
        cpass.dispatch_workgroups(1, 1, 1);
        EncodeReport {
            dispatches: 1,
            blocks: 1,
            max_workgroups: 1,
        }
    }
}

/// An identity range must be whole vec4 words of a `STORAGE` buffer.
fn check_identity_range(buffer: &wgpu::Buffer, byte_offset: u64, bytes: u64) -> Result<()> {
    const WHAT: &str = "identity buffer";
    if !buffer.usage().contains(wgpu::BufferUsages::STORAGE) {
        return Err(Error::MissingUsage {
            what: WHAT,
            missing: wgpu::BufferUsages::STORAGE,
        });
    }
    if !byte_offset.is_multiple_of(WORD) {
        return Err(Error::MisalignedOffset {
            what: WHAT,
            offset: byte_offset,
            elem: WORD,
        });
    }
    if !bytes.is_multiple_of(WORD) {
        return Err(Error::InvalidParameter {
            what: "identity byte count",
            value: bytes as f64,
            need: "a multiple of 16 (whole vec4 words)",
        });
    }
    let end = byte_offset.saturating_add(bytes);
    if end > buffer.size() {
        return Err(Error::BufferTooSmall {
            what: WHAT,
            needed: end,
            size: buffer.size(),
        });
    }
    Ok(())
}

/// How a [`Timer`] measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerKind {
    /// GPU timestamps written before and after the recorded work: the device's own time,
    /// without the submit, the wait or the host's encoding.
    Timestamps,
    /// Host wall time from before encoding until a full wait for the queue returns: includes
    /// encoding, submission and synchronization.
    Wall,
}

impl std::fmt::Display for TimerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimerKind::Timestamps => "gpu-timestamps",
            TimerKind::Wall => "wall",
        })
    }
}

/// Times recorded work, one submit at a time: with GPU timestamps where the device has
/// [`wgpu::Features::TIMESTAMP_QUERY`] (which [`PosEnc::with_default_adapter`] requests
/// where the adapter has it), else wall time with a full wait.
///
/// With timestamps, the work is bracketed by two empty compute passes that write a timestamp
/// each, so the work itself may open its own passes (as every `encode_*` method does).
#[derive(Debug)]
pub struct Timer {
    queries: Option<Queries>,
}

#[derive(Debug)]
struct Queries {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    /// Nanoseconds per timestamp tick.
    period: f64,
}

impl Timer {
    /// A timer for `ctx`'s device: timestamps if it has them, else wall time.
    pub fn new(ctx: &PosEnc) -> Self {
        let device = ctx.device();
        if !device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return Self::wall();
        }
        let set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("wgpu-posenc timer"),
            ty: wgpu::QueryType::Timestamp,
            count: 2,
        });
        let resolve = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgpu-posenc timer"),
            size: 16,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        Self {
            queries: Some(Queries {
                set,
                resolve,
                period: f64::from(ctx.queue().get_timestamp_period()),
            }),
        }
    }

    /// A timer that measures wall time whatever the device has.
    pub fn wall() -> Self {
        Self { queries: None }
    }

    /// How this timer measures.
    pub fn kind(&self) -> TimerKind {
        match self.queries {
            Some(_) => TimerKind::Timestamps,
            None => TimerKind::Wall,
        }
    }

    /// Records `record` into a fresh encoder, submits it, waits for the queue to be idle,
    /// and returns the seconds the work took.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn time(
        &self,
        ctx: &PosEnc,
        record: impl FnOnce(&mut wgpu::CommandEncoder) -> Result<()>,
    ) -> Result<f64> {
        pollster::block_on(self.time_async(ctx, record))
    }

    /// The async form of `Timer::time`, for the web: the wait is the queue's
    /// `onSubmittedWorkDone` (wall time) or the mapping of the resolved timestamps.
    pub async fn time_async(
        &self,
        ctx: &PosEnc,
        record: impl FnOnce(&mut wgpu::CommandEncoder) -> Result<()>,
    ) -> Result<f64> {
        let device = ctx.device();
        let started = Instant::now();
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("wgpu-posenc timer"),
        });
        let stamp = |encoder: &mut wgpu::CommandEncoder, q: &Queries, index: u32| {
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("wgpu-posenc timestamp"),
                timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                    query_set: &q.set,
                    beginning_of_pass_write_index: Some(index),
                    end_of_pass_write_index: None,
                }),
            });
        };
        if let Some(q) = &self.queries {
            stamp(&mut encoder, q, 0);
        }
        record(&mut encoder)?;
        if let Some(q) = &self.queries {
            stamp(&mut encoder, q, 1);
            encoder.resolve_query_set(&q.set, 0..2, &q.resolve, 0);
        }
        ctx.queue().submit([encoder.finish()]);
        let Some(q) = &self.queries else {
            ctx.wait_idle().await?;
            return Ok(started.elapsed().as_secs_f64());
        };
        let bytes = ctx.read_buffer_async(&q.resolve).await?;
        let ticks: [u64; 2] =
            bytemuck::try_pod_read_unaligned(&bytes).map_err(|e| Error::Device {
                what: "reading the timestamps",
                message: e.to_string(),
            })?;
        let ticks = ticks[1].wrapping_sub(ticks[0]);
        Ok(ticks as f64 * q.period * 1e-9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_the_words_once_within_the_binding() {
        for &(offset, words, max_binding, align) in &[
            (0u64, 1u64 << 23, 128u64 << 20, 32u64),
            (0, (1 << 23) + 1, 128 << 20, 32),
            (48, 1 << 24, 128 << 20, 256),
            (16, 5, 64, 32),
            (0, 3 << 26, u64::MAX, 16),
        ] {
            let ranges = identity_ranges(offset, words, max_binding, align);
            let mut next = offset;
            for &(first, n) in &ranges {
                assert_eq!(first, next);
                let window = first - first / align * align + n * WORD;
                assert!(window <= max_binding.max(4 * WORD + align), "{window}");
                assert!(n / 4 <= 1 << 30);
                next = first + n * WORD;
            }
            assert_eq!(next, offset + words * WORD);
        }
        // A tensor of exactly one binding is one dispatch.
        assert_eq!(identity_ranges(0, 1 << 23, 128 << 20, 32).len(), 1);
    }

    /// On the adapter the tests run on: the identity leaves every word as it was, inside
    /// and outside its range, with the range split over many small bindings, and both timers
    /// measure something. (Native: blocking; the browser suite has its own.)
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn identity_changes_nothing_across_bindings() {
        let ctx = PosEnc::with_default_adapter()
            .unwrap_or_else(|e| panic!("the GPU tests need an adapter: {e}"))
            .with_max_binding_size(4096);
        let roofline = Roofline::new(&ctx);
        let words: Vec<u32> = (0..40_000u32)
            .map(|i| i.wrapping_mul(2_654_435_761) | 0x7f80_0001)
            .collect();
        let buffer = ctx
            .device()
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents: bytemuck::cast_slice(&words),
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            });
        let mut encoder = ctx.device().create_command_encoder(&Default::default());
        let report = roofline
            .encode_identity(&mut encoder, &buffer, 48, 16 * 9_000 + 16)
            .expect("encode");
        assert!(report.dispatches > 30, "{report:?}");
        roofline.encode_empty_dispatch(&mut encoder);
        ctx.queue().submit([encoder.finish()]);
        let staging = ctx.device().create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: buffer.size(),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = ctx.device().create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(&buffer, 0, &staging, 0, buffer.size());
        ctx.queue().submit([encoder.finish()]);
        let mut out = vec![0f32; words.len()];
        pollster::block_on(ctx.passes().read_mapped(&staging, &mut out)).expect("read");
        let out: &[u32] = bytemuck::cast_slice(&out);
        assert!(out == words.as_slice(), "the identity changed the buffer");

        for timer in [Timer::new(&ctx), Timer::wall()] {
            let t = timer
                .time(&ctx, |e| {
                    roofline
                        .encode_identity(e, &buffer, 0, 16 * 10_000)
                        .map(drop)
                })
                .expect("time");
            assert!(t.is_finite() && t > 0.0, "{}: {t}", timer.kind());
        }
        let bad = [
            roofline.encode_identity(
                &mut ctx.device().create_command_encoder(&Default::default()),
                &buffer,
                8,
                16,
            ),
            roofline.encode_identity(
                &mut ctx.device().create_command_encoder(&Default::default()),
                &buffer,
                0,
                8,
            ),
            roofline.encode_identity(
                &mut ctx.device().create_command_encoder(&Default::default()),
                &buffer,
                0,
                buffer.size() + 16,
            ),
        ];
        assert!(matches!(bad[0], Err(Error::MisalignedOffset { .. })));
        assert!(matches!(bad[1], Err(Error::InvalidParameter { .. })));
        assert!(matches!(bad[2], Err(Error::BufferTooSmall { .. })));
    }

    #[test]
    fn identity_shader_validates_and_translates() {
        use naga::valid::{Capabilities, ValidationFlags, Validator};
        let source = include_str!("../shaders/identity.wgsl");
        let module = naga::front::wgsl::parse_str(source)
            .unwrap_or_else(|e| panic!("{}", e.emit_to_string(source)));
        let info = Validator::new(ValidationFlags::all(), Capabilities::all())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{}", e.emit_to_string(source)));
        let functions = module
            .functions
            .iter()
            .map(|(_, f)| f)
            .chain(module.entry_points.iter().map(|e| &e.function));
        for function in functions {
            for (_, expr) in function.expressions.iter() {
                assert!(!matches!(expr, naga::Expression::Math { .. }), "{expr:?}");
            }
        }
        let spv =
            naga::back::spv::write_vec(&module, &info, &Default::default(), None).expect("SPIR-V");
        assert_eq!(spv[0], 0x0723_0203);
        let entry = Some((naga::ShaderStage::Compute, "main".to_string()));
        let (msl, _) = naga::back::msl::write_string(
            &module,
            &info,
            &naga::back::msl::Options::default(),
            &naga::back::msl::PipelineOptions {
                entry_point: entry.clone(),
                ..Default::default()
            },
        )
        .expect("MSL");
        assert!(msl.contains("kernel void"));
        let mut hlsl = String::new();
        naga::back::hlsl::Writer::new(
            &mut hlsl,
            &Default::default(),
            &naga::back::hlsl::PipelineOptions { entry_point: entry },
        )
        .write(&module, &info, None)
        .expect("HLSL");
        assert!(hlsl.contains("[numthreads(64, 1, 1)]"));
        let mut glsl = String::new();
        naga::back::glsl::Writer::new(
            &mut glsl,
            &module,
            &info,
            &naga::back::glsl::Options {
                version: naga::back::glsl::Version::Embedded {
                    version: 310,
                    is_webgl: false,
                },
                ..Default::default()
            },
            &naga::back::glsl::PipelineOptions {
                shader_stage: naga::ShaderStage::Compute,
                entry_point: "main".into(),
                multiview: None,
            },
            naga::proc::BoundsCheckPolicies::default(),
        )
        .and_then(|mut w| w.write())
        .expect("GLSL");
        assert!(glsl.contains("layout(local_size_x = 64"));
    }

    #[test]
    fn grids_fold_with_little_waste() {
        assert_eq!(fold_grid(1), (1, [1, 1]));
        assert_eq!(fold_grid(65_535), (65_535, [65_535, 1]));
        let (_, [x, y]) = fold_grid(131_072);
        assert_eq!((x, y), (43_691, 3));
        assert!(u64::from(x) * u64::from(y) - 131_072 < u64::from(y));
    }
}
