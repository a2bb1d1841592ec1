//! Shared by the GPU tests: the context, random data, poisoned buffers, and comparison
//! against the reference with guard checks.
#![allow(
    dead_code,
    reason = "each test binary uses a different part of this module"
)]

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

/// splitmix64: small, seedable, good enough for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo)
    }

    /// Uniform in [-1, 1), never exactly zero.
    pub fn value(&mut self) -> f32 {
        let v = (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0;
        if v == 0.0 { 0.5 } else { v }
    }

    pub fn values(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.value()).collect()
    }
}

/// A NaN whose payload encodes `i`: any write over it shows up bit for bit.
pub fn poison(i: usize) -> f32 {
    f32::from_bits(0x7fc0_0000 | (i as u32 & 0x3f_ffff))
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

/// Submits `encoder` after a copy of `buffer` into a staging buffer, and returns the copy.
pub fn read_back(buffer: &wgpu::Buffer, mut encoder: wgpu::CommandEncoder) -> Vec<f32> {
    let ctx = ctx();
    let device = ctx.device();
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test readback"),
        size: buffer.size(),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, buffer.size());
    ctx.queue().submit([encoder.finish()]);
    let slice = staging.slice(..);
    slice.map_async(wgpu::MapMode::Read, |r| r.expect("map"));
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("poll");
    let out = bytemuck::cast_slice::<u8, f32>(&slice.get_mapped_range().expect("mapped")).to_vec();
    staging.unmap();
    out
}

/// A u32 STORAGE buffer.
pub fn u32_buffer(data: &[u32]) -> wgpu::Buffer {
    ctx()
        .device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("test ids"),
            contents: bytemuck::cast_slice(data),
            usage: wgpu::BufferUsages::STORAGE,
        })
}

/// Compares a GPU result with the reference's. Where the reference left an element as it
/// was (guards, gaps, the rotary tail, poison), the GPU must have left it bit for bit;
/// elsewhere the two must agree within `tol`. Returns the largest difference.
#[track_caller]
pub fn assert_matches(input: &[f32], gpu: &[f32], reference: &[f64], tol: f64, what: &str) -> f64 {
    assert_eq!(gpu.len(), reference.len());
    let mut worst = 0.0f64;
    for (i, ((&x, &g), &r)) in input.iter().zip(gpu).zip(reference).enumerate() {
        if r.to_bits() == f64::from(x).to_bits() {
            assert_eq!(
                g.to_bits(),
                x.to_bits(),
                "{what}: element {i} should be untouched ({x} -> {g})"
            );
        } else {
            let err = (f64::from(g) - r).abs();
            assert!(
                err <= tol,
                "{what}: element {i}: gpu {g}, reference {r}, error {err:e} > {tol:e}"
            );
            worst = worst.max(err);
        }
    }
    worst
}

/// Input for a view: random values everywhere the view can reach, poison in the
/// `guard` elements before and after it and in every gap between rows.
pub fn guarded_input(rng: &mut Rng, layout: &wgpu_posenc::Layout, guard: usize) -> Vec<f32> {
    let end = layout.end().expect("valid layout") as usize;
    let mut data: Vec<f32> = (0..end + guard).map(poison).collect();
    let [nb, nh, ns, d] = layout.shape;
    for b in 0..nb {
        for h in 0..nh {
            for s in 0..ns {
                let row = wgpu_posenc::reference::row_start(layout, b, h, s) as usize;
                for k in 0..d as usize {
                    data[row + k] = rng.value();
                }
            }
        }
    }
    data
}

/// The largest absolute difference over the elements the GPU and the reference both
/// computed (no poison expected anywhere).
pub fn max_error(gpu: &[f32], reference: &[f64]) -> f64 {
    gpu.iter()
        .zip(reference)
        .map(|(&g, &r)| {
            if g.is_nan() {
                f64::INFINITY
            } else {
                (f64::from(g) - r).abs()
            }
        })
        .fold(0.0, f64::max)
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

/// The input as f64, for the reference.
pub fn widen(x: &[f32]) -> Vec<f64> {
    x.iter().map(|&v| f64::from(v)).collect()
}
