//! RoPE over three position axes with a frequency list per axis
//! ([`RopeSpec::axes_rope`]), against diffusers' FLUX.1 and Wan 2.1 rotary modules
//! (`tests/data/diffusers/rope_axes.py`: their cos/sin tables applied by diffusers'
//! `apply_rotary_emb` at the pipelines' own positions), on the whole sequence in a poisoned
//! buffer with guards, and against the f64 reference.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{Rng, ctx, poison, run_on_buffer, test_data, u32_buffer};
use serde_json::Value;
use wgpu_posenc::{ArrayView, Layout, PairLayout, Positions, RopeSpec, TensorView, reference};

fn u(v: &Value) -> u64 {
    v.as_u64().expect("integer")
}

fn list(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

/// The positions of every token, `[t.. | h.. | w..]` (`Positions::Axes`): FLUX's text ids
/// (zeros) then its image ids `(0, row, column)`; Wan's `(frame, row, column)`.
fn positions(case: &Value) -> Vec<u32> {
    let text = u(&case["text_tokens"]);
    let grid: Vec<u64> = case["grid"]
        .as_array()
        .expect("grid")
        .iter()
        .map(u)
        .collect();
    let [f, h, w] = match grid[..] {
        [h, w] => [1, h, w],
        [f, h, w] => [f, h, w],
        _ => panic!("grid {grid:?}"),
    };
    let n = (text + f * h * w) as usize;
    let mut axes = vec![0u32; 3 * n];
    for i in 0..f * h * w {
        let token = (text + i) as usize;
        axes[token] = (i / (h * w)) as u32;
        axes[n + token] = ((i / w) % h) as u32;
        axes[2 * n + token] = (i % w) as u32;
    }
    axes
}

#[test]
fn flux_and_wan_rotations_match_diffusers() {
    let data = test_data("diffusers/rope_axes.json");
    for case in data["cases"].as_array().expect("cases") {
        let name = case["name"].as_str().expect("name");
        let (s, heads, d) = (u(&case["tokens"]), u(&case["heads"]), u(&case["head_dim"]));
        let dims: Vec<u64> = case["axes_dims"]
            .as_array()
            .expect("dims")
            .iter()
            .map(u)
            .collect();
        let spec = RopeSpec::new()
            .base(case["theta"].as_f64().expect("theta"))
            .pair_layout(PairLayout::Interleaved)
            .axes_rope([dims[0] / 2, dims[1] / 2, dims[2] / 2]);
        let axes = positions(case);
        let n = s as usize;
        let rows: Vec<usize> = case["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| u(r) as usize)
            .collect();
        // The pipeline's positions at the sampled tokens are the ones built here.
        for (k, &r) in rows.iter().enumerate() {
            let want: Vec<u32> = list(&case["positions"][k])
                .iter()
                .map(|&x| x as u32)
                .collect();
            assert_eq!(
                [axes[r], axes[n + r], axes[2 * n + r]],
                want[..],
                "{name} token {r}"
            );
        }
        // Random Q, the sampled rows diffusers' own.
        let row = (heads * d) as usize;
        let mut q = Rng::new(28).values(n * row);
        for (k, &r) in rows.iter().enumerate() {
            let mine: Vec<f32> = list(&case["q"][k]).iter().map(|&x| x as f32).collect();
            q[r * row..(r + 1) * row].copy_from_slice(&mine);
        }
        let guard = 7;
        let layout = Layout::bshd(wgpu_posenc::Dims {
            batch: 1,
            seq: s,
            heads,
            head_dim: d,
        })
        .with_offset(guard as u64);
        let input: Vec<f32> = (0..guard)
            .map(poison)
            .chain(q.iter().copied())
            .chain((0..guard).map(|i| poison(guard + n * row + i)))
            .collect();
        let ids = u32_buffer(&axes);
        let out = run_on_buffer(&input, |encoder, buffer| {
            let positions = Positions::Axes(ArrayView::new(&ids));
            ctx()
                .encode_rope(encoder, &spec, &TensorView::new(buffer, layout), positions)
                .expect("encode");
        });
        for i in (0..guard).chain(guard + n * row..2 * guard + n * row) {
            assert_eq!(
                out[i].to_bits(),
                poison(i).to_bits(),
                "{name}: guard {i} overwritten"
            );
        }
        let got = &out[guard..guard + n * row];
        // Against diffusers at the sampled tokens (f32 cos/sin of f64 angles, f32 products).
        let mut theirs = 0.0f64;
        for (k, &r) in rows.iter().enumerate() {
            for (a, b) in got[r * row..(r + 1) * row]
                .iter()
                .zip(list(&case["rotated"][k]))
            {
                theirs = theirs.max((f64::from(*a) - b).abs());
            }
        }
        // Against the f64 reference over every token.
        let mut x: Vec<f64> = q.iter().map(|&v| f64::from(v)).collect();
        let plain = Layout::bshd(wgpu_posenc::Dims {
            batch: 1,
            seq: s,
            heads,
            head_dim: d,
        });
        reference::rope(&spec, &plain, &mut x, Positions::Axes(&axes));
        let ours = got
            .iter()
            .zip(&x)
            .map(|(&a, &b)| (f64::from(a) - b).abs())
            .fold(0.0, f64::max);
        assert!(theirs <= 4e-7, "{name}: {theirs:e} from diffusers");
        assert!(ours <= 4e-7, "{name}: {ours:e} from the reference");
        eprintln!(
            "{name} ({s} tokens, axes {dims:?}): within {theirs:.2e} of diffusers at {} tokens, \
             {ours:.2e} of the f64 reference at all",
            rows.len()
        );
    }
}

/// Per-axis frequency lists take no scaling and contiguous sections only: typed errors.
#[test]
fn per_axis_frequencies_refuse_scalings_and_other_orders() {
    use wgpu_posenc::{AxisFrequencies, Error, MRope, MRopeOrder, Scaling};
    let scaled = RopeSpec::new()
        .axes_rope([8, 28, 28])
        .scaling(Scaling::Linear { factor: 2.0 });
    let e = ctx().rope(&scaled, 128).map(drop).expect_err("scaling");
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
    let mut mixed = RopeSpec::new();
    mixed.mrope = Some(MRope {
        section: [8, 28, 28],
        order: MRopeOrder::Interleaved,
        frequencies: AxisFrequencies::PerAxis,
    });
    let e = ctx().rope(&mixed, 128).map(drop).expect_err("order");
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
    // The sections must still cover the pairs.
    let short = RopeSpec::new().axes_rope([8, 28, 27]);
    let e = ctx().rope(&short, 128).map(drop).expect_err("sections");
    assert!(matches!(e, Error::InvalidMRopeSection { .. }), "{e}");
}
