//! The GPU-free half of the tests' helpers, shared by the native tests (through
//! `common`) and the browser suite (`tests/web.rs`): seeded random data, poison and guard
//! regions, and comparison against the reference.
#![allow(
    dead_code,
    reason = "each test binary uses a different part of this module"
)]

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

/// Element bits of `v` stored as `dtype` (16-bit types in the low half), rounded to nearest.
pub fn encode_elem(dtype: wgpu_posenc::Dtype, v: f64) -> u32 {
    match dtype {
        wgpu_posenc::Dtype::F32 => (v as f32).to_bits(),
        wgpu_posenc::Dtype::F16 => u32::from(half::f16::from_f64(v).to_bits()),
        wgpu_posenc::Dtype::BF16 => u32::from(half::bf16::from_f64(v).to_bits()),
    }
}

/// The value of element bits of `dtype`.
pub fn decode_elem(dtype: wgpu_posenc::Dtype, bits: u32) -> f64 {
    match dtype {
        wgpu_posenc::Dtype::F32 => f64::from(f32::from_bits(bits)),
        wgpu_posenc::Dtype::F16 => half::f16::from_bits(bits as u16).to_f64(),
        wgpu_posenc::Dtype::BF16 => half::bf16::from_bits(bits as u16).to_f64(),
    }
}

/// A NaN of `dtype` whose payload encodes `i` (as [`poison`] for f32).
pub fn poison_elem(dtype: wgpu_posenc::Dtype, i: usize) -> u32 {
    match dtype {
        wgpu_posenc::Dtype::F32 => poison(i).to_bits(),
        wgpu_posenc::Dtype::F16 => 0x7e00 | (i as u32 & 0x1ff),
        wgpu_posenc::Dtype::BF16 => 0x7fc0 | (i as u32 & 0x3f),
    }
}
