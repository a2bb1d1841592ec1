//! Shared by the GPU tests: the context, random data, poisoned buffers, and comparison
//! against the reference with guard checks.
#![allow(
    dead_code,
    reason = "each test binary uses a different part of this module"
)]

mod data;
#[allow(unused_imports, reason = "not every test binary uses the data helpers")]
pub use data::*;

use std::sync::OnceLock;

use wgpu::util::DeviceExt;
use wgpu_posenc::PosEnc;

/// The context on the adapter `WGPU_BACKEND` / `WGPU_ADAPTER_NAME` select. Fails (never
/// skips) when there is none, with the error's advice on getting one.
pub fn ctx() -> &'static PosEnc {
    static CTX: OnceLock<PosEnc> = OnceLock::new();
    CTX.get_or_init(|| match PosEnc::with_default_adapter() {
        Ok(ctx) => {
            let info = ctx.adapter_info().expect("picked adapter");
            eprintln!("adapter: {} ({:?})", info.name, info.backend);
            ctx
        }
        Err(e) => panic!("the GPU tests need an adapter: {e}"),
    })
}

/// Runs `encode` on a STORAGE buffer holding `initial`, submits, and returns its contents.
pub fn run_on_buffer(
    initial: &[f32],
    encode: impl FnOnce(&mut wgpu::CommandEncoder, &wgpu::Buffer),
) -> Vec<f32> {
    let ctx = ctx();
    let device = ctx.device();
    let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("test data"),
        contents: bytemuck::cast_slice(initial),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    encode(&mut encoder, &buffer);
    read_back(&buffer, encoder)
}

/// Submits `encoder`, then reads `buffer` back (`PosEnc::read_buffer`) as f32 values.
pub fn read_back(buffer: &wgpu::Buffer, encoder: wgpu::CommandEncoder) -> Vec<f32> {
    let ctx = ctx();
    ctx.queue().submit([encoder.finish()]);
    let bytes = ctx.read_buffer(buffer).expect("read back");
    bytemuck::cast_slice::<u8, f32>(&bytes[..bytes.len() / 4 * 4]).to_vec()
}

/// A u32 STORAGE buffer.
pub fn u32_buffer(data: &[u32]) -> wgpu::Buffer {
    // A binding needs at least one word.
    let data = if data.is_empty() { &[0][..] } else { data };
    ctx()
        .device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("test ids"),
            contents: bytemuck::cast_slice(data),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        })
}

/// An f32 STORAGE buffer holding `data`.
pub fn f32_buffer(data: &[f32]) -> wgpu::Buffer {
    ctx()
        .device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("test f32"),
            contents: bytemuck::cast_slice(data),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        })
}

/// Runs `encode` over several buffers at once and returns each one's contents after.
pub fn run_on_buffers(
    initial: &[&[f32]],
    encode: impl FnOnce(&mut wgpu::CommandEncoder, &[wgpu::Buffer]),
) -> Vec<Vec<f32>> {
    let buffers: Vec<wgpu::Buffer> = initial.iter().map(|d| f32_buffer(d)).collect();
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    encode(&mut encoder, &buffers);
    ctx().queue().submit([encoder.finish()]);
    buffers
        .iter()
        .map(|b| {
            read_back(
                b,
                ctx().device().create_command_encoder(&Default::default()),
            )
        })
        .collect()
}

/// RoPE in place on the GPU over a buffer holding `input`, through `ctx` (which may cap
/// its bindings); returns the buffer after and what was recorded.
pub fn rope_on_buffer(
    ctx: &PosEnc,
    input: &[f32],
    spec: &wgpu_posenc::RopeSpec,
    layout: wgpu_posenc::Layout,
    positions: wgpu_posenc::Positions<wgpu_posenc::ArrayView<'_>>,
) -> (Vec<f32>, wgpu_posenc::EncodeReport) {
    let mut report = None;
    let out = run_on_buffer(input, |encoder, buffer| {
        let view = wgpu_posenc::TensorView::new(buffer, layout);
        report = Some(
            ctx.encode_rope(encoder, spec, &view, positions)
                .expect("encode"),
        );
    });
    (out, report.expect("encoded"))
}

/// Runs `encode` over a buffer of 16-bit values; returns them after.
pub fn run_on_u16(
    data: &[u16],
    encode: impl FnOnce(&mut wgpu::CommandEncoder, &wgpu::Buffer) -> wgpu_posenc::Result<()>,
) -> wgpu_posenc::Result<Vec<u16>> {
    let mut padded = data.to_vec();
    // Buffers hold whole u32 words.
    padded.resize(data.len().next_multiple_of(2), 0);
    let buffer = ctx()
        .device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("test 16-bit data"),
            contents: bytemuck::cast_slice(&padded),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        });
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    encode(&mut encoder, &buffer)?;
    let words = read_back(&buffer, encoder);
    Ok(bytemuck::cast_slice::<f32, u16>(&words)[..data.len()].to_vec())
}
