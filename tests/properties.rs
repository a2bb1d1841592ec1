//! The seeds' properties, on GPU output: attention scores depend on relative position only
//! (`<R_m q, R_n k> = <R_{m+c} q, R_{n+c} k>`), rotation preserves norms, and the inverse
//! rotation restores the input.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{Rng, ctx};
use wgpu_posenc::Dims;
use wgpu_posenc::{HostPositions, Layout, PairLayout, RopeSpec};

const LAYOUTS: [PairLayout; 2] = [PairLayout::Interleaved, PairLayout::HalfSplit];

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| f64::from(x) * f64::from(y))
        .sum()
}

/// Rotates `x` (one head of `seq` tokens of width `d`) at positions `ids`.
fn rotate(spec: &RopeSpec, d: u64, x: &[f32], ids: &[u32]) -> Vec<f32> {
    let mut out = x.to_vec();
    let layout = Layout::bhsd([1, 1, ids.len() as u64, d]);
    ctx()
        .rope_host(spec, layout, &mut out, HostPositions::Ids(ids))
        .expect("rope");
    out
}

#[test]
fn scores_depend_on_relative_position_only() {
    let mut rng = Rng::new(11);
    let d = 128;
    for pair_layout in LAYOUTS {
        let spec = RopeSpec::new().pair_layout(pair_layout);
        // 64 (q, k) pairs at random positions m, n, and each shifted by a random c,
        // including shifts that take them near the end of the u32 range.
        let mut ids = Vec::new();
        let mut shifted = Vec::new();
        for _ in 0..64 {
            let m = rng.range(0, 1 << 20) as u32;
            let n = rng.range(0, 1 << 20) as u32;
            let c = rng.range(0, u64::from(u32::MAX) - (1 << 20)) as u32;
            ids.extend([m, n]);
            shifted.extend([m + c, n + c]);
        }
        let x = rng.values(ids.len() * d as usize);
        let a = rotate(&spec, d, &x, &ids);
        let b = rotate(&spec, d, &x, &shifted);
        for t in 0..64 {
            let row = |v: &[f32], i: usize| v[i * d as usize..(i + 1) * d as usize].to_vec();
            let (q, k) = (2 * t, 2 * t + 1);
            let s0 = dot(&row(&a, q), &row(&a, k));
            let s1 = dot(&row(&b, q), &row(&b, k));
            // |q|,|k| ~ sqrt(128/3): a score error of 1e-4 is 5e-7 per element.
            assert!(
                (s0 - s1).abs() < 1e-4,
                "{pair_layout:?} pair {t}: {s0} vs {s1}"
            );
        }
    }
}

#[test]
fn rotation_preserves_norms_and_inverse_restores() {
    let mut rng = Rng::new(12);
    for pair_layout in LAYOUTS {
        for r in [128u64, 64] {
            let shape = [2, 4, 33, 128];
            let layout = Layout::bshd(Dims::from_logical(shape));
            let x = rng.values(2 * 4 * 33 * 128);
            let spec = RopeSpec::new().pair_layout(pair_layout).rotary_dim(r);
            let start = 1_000_000_000;
            let mut y = x.clone();
            ctx()
                .rope_host(&spec, layout, &mut y, HostPositions::Start(start))
                .expect("rope");
            assert_ne!(x, y);
            for (row_x, row_y) in x.chunks(128).zip(y.chunks(128)) {
                let (nx, ny) = (dot(row_x, row_x).sqrt(), dot(row_y, row_y).sqrt());
                assert!((nx - ny).abs() < 2e-6 * nx.max(1.0), "norm {nx} -> {ny}");
            }
            let mut back = y.clone();
            let inverse = spec.clone().inverse(true);
            ctx()
                .rope_host(&inverse, layout, &mut back, HostPositions::Start(start))
                .expect("inverse");
            let worst = x
                .iter()
                .zip(&back)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(
                worst < 2e-6,
                "{pair_layout:?} r {r}: inverse leaves error {worst}"
            );
        }
    }
}
