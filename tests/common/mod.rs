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

/// Test data from rand's Xoshiro256++ (the generator the benches and examples use too),
/// seeded so that every run sees the same values.
pub struct Rng(rand::rngs::Xoshiro256PlusPlus);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(rand::SeedableRng::seed_from_u64(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        rand::Rng::next_u64(&mut self.0)
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        rand::RngExt::random_range(&mut self.0, lo..hi)
    }

    /// Uniform in [-1, 1), never exactly zero.
    pub fn value(&mut self) -> f32 {
        let v: f32 = rand::RngExt::random_range(&mut self.0, -1.0..1.0);
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

/// Bit patterns, for comparisons that must hold bit for bit.
pub fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The reference's RoPE of `input` (f64).
pub fn expected_rope(
    spec: &wgpu_posenc::RopeSpec,
    layout: &wgpu_posenc::Layout,
    input: &[f32],
    positions: wgpu_posenc::HostPositions<'_>,
) -> Vec<f64> {
    let mut expected = widen(input);
    wgpu_posenc::reference::rope(spec, layout, &mut expected, positions);
    expected
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

/// 16-bit input for a view: `guarded_input` (random rows, poison elsewhere) converted by
/// `to_bits` (f16 or bf16; poison stays NaN).
pub fn guarded_u16(
    rng: &mut Rng,
    layout: &wgpu_posenc::Layout,
    guard: usize,
    to_bits: impl Fn(f32) -> u16,
) -> Vec<u16> {
    guarded_input(rng, layout, guard)
        .into_iter()
        .map(to_bits)
        .collect()
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

/// A 16-bit result within one rounding of the reference: where the reference left an
/// element as it was, the GPU must have too, bit for bit; elsewhere the error is at most
/// half a unit in the last place of the format (`mantissa` stored bits, `min_exp` the
/// smallest normal exponent) at the reference value, plus 2e-6 for the f32 arithmetic
/// before the rounding.
#[track_caller]
pub fn assert_one_rounding(
    input: &[u16],
    gpu: &[u16],
    value: impl Fn(u16) -> f64,
    expected: &[f64],
    (mantissa, min_exp): (i32, i32),
    what: &str,
) {
    for (i, ((&x, &g), &r)) in input.iter().zip(gpu).zip(expected).enumerate() {
        if r.to_bits() == value(x).to_bits() {
            assert_eq!(g, x, "{what}: element {i} should be untouched");
        } else {
            let exp = (r.abs().log2().floor() as i32).max(min_exp);
            let half_ulp = 2f64.powi(exp - mantissa - 1);
            let err = (value(g) - r).abs();
            assert!(
                err <= half_ulp + 2e-6,
                "{what}: element {i}: gpu {}, reference {r}, error {err:e} > {:e}",
                value(g),
                half_ulp + 2e-6
            );
        }
    }
}
