//! What the random calls draw for the sinusoidal encoding beyond its layout: the frequency
//! form (Vaswani's base or diffusers' timestep projection with its shift, scale and period,
//! bad values among them) and f32 positions (timesteps, coordinates, negatives; on the host
//! also NaN, infinities and values past 2^32, which must be refused).

use wgpu_posenc::{SinusoidalLayout, SinusoidalSpec};

/// The spec of a case: `form` 0 to 2 Vaswani's (the RoPE base), 3 and up diffusers' timestep
/// projection, whose parameters `seed` draws (about one in six of them bad).
pub fn spec(d: u64, layout: SinusoidalLayout, base: f64, form: u8, seed: u64) -> SinusoidalSpec {
    let plain = SinusoidalSpec::new(d).layout(layout).base(base);
    if form < 3 {
        return plain;
    }
    let pick = |k: u64, n: u64| ((seed >> (8 * k)) % n) as usize;
    let shift = [0.0, 1.0, 0.5, (d / 2) as f64, -2.0, f64::NAN][pick(1, 6)];
    let scale = [1.0, 1000.0, 0.25, 1.0, f64::INFINITY][pick(2, 5)];
    let period = [10_000.0, 1000.0, 10_000.0, 0.0][pick(3, 4)];
    let layout = [
        SinusoidalLayout::ConcatenatedCosFirst,
        SinusoidalLayout::Concatenated,
        layout,
    ][pick(4, 3)];
    SinusoidalSpec::timesteps(d, false, shift)
        .layout(layout)
        .freq_scale(scale)
        .max_period(period)
}

/// `n` f32 positions (their bits), from `seed`; with `bad`, one of them (when there is one)
/// a value the host must refuse.
pub fn float_positions(n: u64, seed: u64, bad: bool) -> Vec<u32> {
    let mut rng = super::common::Rng::new(seed ^ 0x5eed);
    let mut values: Vec<f32> = (0..n)
        .map(|i| {
            let u = rng.value();
            match i % 5 {
                0 => (u + 1.0) * 500.0,
                1 => u * 8.0,
                2 => (u * 1e5).round() + 0.5,
                3 => u * 4.29e9,
                _ => f32::from_bits(rng.range(0, 1 << 23) as u32), // subnormal
            }
        })
        .collect();
    if bad && n > 0 {
        let at = rng.range(0, n) as usize;
        values[at] =
            [f32::NAN, f32::INFINITY, -f32::INFINITY, 4294967296.0, 1e20][rng.range(0, 5) as usize];
    }
    values.iter().map(|v| v.to_bits()).collect()
}
