//! What the random calls draw for the sinusoidal encoding beyond its layout: the frequency
//! form (Vaswani's base or diffusers' timestep projection with its shift, scale and period,
//! bad values among them), f32 positions (timesteps, coordinates, negatives; on the host
//! also NaN, infinities and values past 2^32, which must be refused), and sin-cos grid
//! calls (`grid_strategy`, `run_grid`).

use proptest::prelude::*;
use wgpu_posenc::{
    Dtype, GridBlock, Layout, SincosGrid, SinusoidalLayout, SinusoidalSpec, TensorView, reference,
};

use super::common::ctx;

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

/// A random sin-cos grid call: the grid (blocks side by side as diffusers lays them out, or
/// sines then cosines as timm does; sometimes broken: overlapping or missing columns, a
/// cosine inside its own sines, coordinates NaN or past 2^32), the view (sometimes of the
/// wrong row count), the dtype and the operation (table, or add with a scale, NaN among
/// them).
#[derive(Clone, Debug)]
pub struct GridCase {
    pub grid: SincosGrid,
    pub layout: Layout,
    pub dtype: Dtype,
    pub add: Option<f32>,
    pub seed: u64,
}

pub fn grid_strategy() -> impl Strategy<Value = GridCase> {
    (
        any::<u64>(),
        0u8..4,
        0u8..3,
        prop_oneof![Just(Dtype::F32), Just(Dtype::BF16)],
    )
        .prop_map(|(seed, style, op, dtype)| {
            let mut rng = super::common::Rng::new(seed);
            let mut pick = |n: u64| rng.range(0, n);
            let mut coord_rng = super::common::Rng::new(seed ^ 0xc0);
            let axes = 1 + pick(3);
            let pairs: Vec<u64> = (0..axes)
                .map(|_| [1, 2, 3, 4, 8][pick(5) as usize])
                .collect();
            let dim: u64 = pairs.iter().map(|p| 2 * p).sum();
            let tokens = pick(20);
            let sines: u64 = pairs.iter().sum();
            let mut first = 0;
            let mut blocks: Vec<GridBlock> = pairs
                .iter()
                .map(|&p| {
                    let coords = (0..tokens)
                        .map(|_| (coord_rng.value() * 1e4).round() / 16.0)
                        .collect();
                    let (at, cos_offset) = match style {
                        // timm: every sine first, the cosines after all of them.
                        0 => (first, sines),
                        _ => (2 * first, p),
                    };
                    first += p;
                    GridBlock {
                        first: at,
                        pairs: p,
                        cos_offset,
                        base: [10_000.0, 100.0][(p % 2) as usize],
                        coords,
                    }
                })
                .collect();
            // One case in eight broken.
            match pick(8) {
                0 => blocks[0].first += 1,
                1 => blocks[0].cos_offset = 0,
                2 if tokens > 0 => blocks[0].coords[0] = f32::NAN,
                3 if tokens > 0 => blocks[0].coords[0] = 5e9,
                _ => {}
            }
            let grid = SincosGrid {
                dim,
                zero_rows: pick(3),
                blocks,
            };
            let rows = grid.rows() + u64::from(pick(10) == 0);
            let [b, h] = [1 + pick(2), 1 + pick(2)];
            let layout = if style == 3 {
                Layout::strided(
                    [b, h, rows, dim],
                    [rows * (h * dim + 3) + 1, dim + 1, h * dim + 3],
                )
            } else {
                Layout::strided([b, h, rows, dim], [h * rows * dim, rows * dim, dim])
            }
            .with_offset(pick(5));
            let add = match op {
                0 => None,
                1 => Some(0.5),
                _ => Some([2.0, f32::NAN][pick(2) as usize]),
            };
            GridCase {
                grid,
                layout,
                dtype,
                add,
                seed,
            }
        })
}

/// Runs a grid case: `Ok(true)` when it ran and matched the reference, `Ok(false)` when it
/// returned an error (nothing submitted).
pub fn run_grid(case: &GridCase) -> Result<bool, String> {
    let layout = case.layout;
    let Some(input) = super::data(&layout, 7, case.seed) else {
        return Ok(false);
    };
    let n = input.len();
    let bytes = super::to_bytes(&input, case.dtype);
    let before = super::values(&bytes, case.dtype, n);
    let x = super::buffer(&bytes);
    let view = TensorView::new(&x, layout).with_dtype(case.dtype);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let result = match case.add {
        Some(s) => ctx().encode_sincos_grid_add(&mut encoder, &case.grid, &view, s),
        None => ctx().encode_sincos_grid(&mut encoder, &case.grid, &view),
    };
    if result.is_err() {
        return Ok(false);
    }
    ctx().queue().submit([encoder.finish()]);
    let got = super::values(&super::read(&x), case.dtype, n);
    let table = reference::sincos_grid(&case.grid);
    let [nb, nh, ns, d] = layout.shape;
    let mut want = before.clone();
    for b in 0..nb {
        for h in 0..nh {
            for s in 0..ns {
                let at = reference::row_start(&layout, b, h, s) as usize;
                for k in 0..d as usize {
                    let pe = table[(s * d) as usize + k];
                    let x = &mut want[at + k];
                    *x = case.add.map_or(pe, |sc| *x * f64::from(sc) + pe);
                }
            }
        }
    }
    super::check(&before, &got, &want, case.dtype, false).map(|()| true)
}
