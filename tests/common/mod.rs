//! Shared by the GPU tests: the context, random data, poisoned buffers, and comparison
//! against the reference with guard checks.
#![allow(
    dead_code,
    reason = "each test binary uses a different part of this module"
)]

mod data;
#[allow(unused_imports, reason = "not every test binary uses the data helpers")]
pub use data::*;
mod hf;
#[allow(unused_imports, reason = "only the golden-data tests read it")]
pub use hf::*;

use std::sync::OnceLock;

use wgpu::util::DeviceExt;
use wgpu_posenc::{Dtype, Layout, PosEnc, reference};

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

/// A buffer of elements of one dtype (16-bit ones packed in pairs): poison NaNs, random
/// values in the rows of the layouts marked random, `guard` poisoned elements past the last
/// view. It remembers its initial bits, to tell untouched elements from written ones.
pub struct Elements {
    pub dtype: Dtype,
    pub bits: Vec<u32>,
    pub buffer: wgpu::Buffer,
}

impl Elements {
    /// `None` when a layout is malformed or too large to hold on the host (2^22 elements).
    pub fn new(
        rng: &mut Rng,
        dtype: Dtype,
        layouts: &[(Layout, bool)],
        guard: u64,
    ) -> Option<Self> {
        let mut len = 0;
        for (l, _) in layouts {
            len = len.max(l.end().ok()?.max(l.offset));
        }
        if len > 1 << 22 {
            return None;
        }
        let mut bits: Vec<u32> = (0..(len + guard) as usize)
            .map(|i| poison_elem(dtype, i))
            .collect();
        for (l, _) in layouts.iter().filter(|(_, random)| *random) {
            let [b, h, s, d] = l.shape;
            for (bb, hh, ss) in
                (0..b).flat_map(|x| (0..h).flat_map(move |y| (0..s).map(move |z| (x, y, z))))
            {
                let at = reference::row_start(l, bb, hh, ss) as usize;
                for e in 0..d as usize {
                    bits[at + e] = encode_elem(dtype, f64::from(rng.value()));
                }
            }
        }
        let mut bytes: Vec<u8> = match dtype {
            Dtype::F32 => bits.iter().flat_map(|b| b.to_le_bytes()).collect(),
            _ => bits
                .iter()
                .flat_map(|&b| (b as u16).to_le_bytes())
                .collect(),
        };
        bytes.resize(bytes.len().next_multiple_of(4).max(16), 0);
        let buffer = ctx()
            .device()
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("test elements"),
                contents: &bytes,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            });
        Some(Self {
            dtype,
            bits,
            buffer,
        })
    }

    pub fn values(&self) -> Vec<f64> {
        self.bits
            .iter()
            .map(|&b| decode_elem(self.dtype, b))
            .collect()
    }

    pub fn read(&self) -> Vec<u32> {
        let bytes = ctx().read_buffer(&self.buffer).expect("read back");
        let n = self.bits.len();
        match self.dtype {
            Dtype::F32 => bytes
                .chunks(4)
                .take(n)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect(),
            _ => bytes
                .chunks(2)
                .take(n)
                .map(|c| u32::from(u16::from_le_bytes(c.try_into().unwrap())))
                .collect(),
        }
    }

    /// Within one rounding of the stored type (half an ulp), on top of the f32 arithmetic's
    /// 1e-6 (relative above 1) that every f32 result of the suite is held to.
    pub fn near(&self, got: u32, want: f64) -> bool {
        let rel = match self.dtype {
            Dtype::F32 => 0.0,
            Dtype::F16 => 2f64.powi(-11),
            Dtype::BF16 => 2f64.powi(-8),
        };
        let g = decode_elem(self.dtype, got);
        (g - want).abs() <= rel * want.abs() + 1e-6 * want.abs().max(1.0)
    }

    /// Every element: untouched where `want` kept the initial value, else within one
    /// rounding of it ([`Elements::near`]). Returns the largest error.
    pub fn check(&self, want: &[f64], what: &str) -> Result<f64, String> {
        let mut worst = 0.0f64;
        for (i, (&g, &w)) in self.read().iter().zip(want).enumerate() {
            let initial = decode_elem(self.dtype, self.bits[i]);
            let ok = if w.to_bits() == initial.to_bits() {
                g == self.bits[i]
            } else {
                worst = worst.max((decode_elem(self.dtype, g) - w).abs());
                self.near(g, w)
            };
            if !ok {
                return Err(format!(
                    "{what}: element {i} is {} ({g:#x}), expected {w}",
                    decode_elem(self.dtype, g)
                ));
            }
        }
        Ok(worst)
    }
}
