//! RoPE on the GPU against the f64 reference: random data and shapes, both pair layouts,
//! BHSD / BSHD / padded strides, partial rotary dims, offsets, position ids, inverse.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{Rng, assert_matches, ctx, guarded_input, run_on_buffer, u32_buffer};
use wgpu_posenc::Dims;
use wgpu_posenc::{
    ArrayView, HostPositions, Layout, PairLayout, Positions, RopeSpec, TensorView, reference,
};

/// Rotated outputs: |x| < 1, cos/sin within 2.5e-7, plus two f32 roundings.
const TOL: f64 = 1e-6;

#[derive(Clone, Copy, Debug)]
enum Tensor {
    Bhsd,
    Bshd,
    /// BHSD with padding after each row and each head.
    Padded,
}

fn layout_of(kind: Tensor, shape: [u64; 4], offset: u64) -> Layout {
    let layout = match kind {
        Tensor::Bhsd => Layout::bhsd(shape),
        Tensor::Bshd => Layout::bshd(Dims::from_logical(shape)),
        Tensor::Padded => {
            let [_, h, s, d] = shape;
            let row = d + 4;
            let head = s * row + 8;
            Layout::strided(shape, [h * head, head, row])
        }
    };
    layout.with_offset(offset)
}

/// Runs one case on the GPU and checks it; `ids` replaces contiguous positions.
fn check_case(
    rng: &mut Rng,
    spec: &RopeSpec,
    layout: Layout,
    start: u32,
    ids: Option<&[u32]>,
) -> f64 {
    let input = guarded_input(rng, &layout, 13);
    let ids_buffer = ids.map(u32_buffer);
    let gpu = run_on_buffer(&input, |encoder, buffer| {
        let positions = match &ids_buffer {
            Some(buffer) => Positions::Ids(ArrayView::new(buffer)),
            None => Positions::Start(start),
        };
        ctx()
            .encode_rope(encoder, spec, &TensorView::new(buffer, layout), positions)
            .expect("encode");
    });
    let mut expected: Vec<f64> = input.iter().map(|&v| f64::from(v)).collect();
    let positions = match ids {
        Some(ids) => HostPositions::Ids(ids),
        None => HostPositions::Start(start),
    };
    reference::rope(spec, &layout, &mut expected, positions);
    assert_matches(
        &input,
        &gpu,
        &expected,
        TOL,
        &format!("{spec:?} {layout:?} start {start}"),
    )
}

#[test]
fn random_shapes_match_the_reference() {
    let mut rng = Rng::new(1);
    let head_dims = [2u64, 6, 8, 16, 24, 64, 80, 96, 128];
    let mut worst = 0.0f64;
    for case in 0..48 {
        let d = head_dims[case % head_dims.len()];
        // Partial rotary in every third case: an even r below d (down to 2).
        let r = if case % 3 == 0 && d > 2 {
            2 * rng.range(1, d / 2)
        } else {
            d
        };
        let pair_layout = if case % 2 == 0 {
            PairLayout::Interleaved
        } else {
            PairLayout::HalfSplit
        };
        let kind = [Tensor::Bhsd, Tensor::Bshd, Tensor::Padded][case % 3];
        let shape = [rng.range(1, 3), rng.range(1, 5), rng.range(1, 70), d];
        // Offsets: 0, a multiple of 4 (vec4 path stays), or odd-ish (scalar path).
        let offset = [0, 16, 13][(case / 3) % 3];
        let start = [0, 1, 4093, u32::MAX - 80][case % 4];
        let spec = RopeSpec::new()
            .pair_layout(pair_layout)
            .rotary_dim(r)
            .base([10_000.0, 500_000.0, 1e6][case % 3])
            .inverse(case % 5 == 0);
        worst = worst.max(check_case(
            &mut rng,
            &spec,
            layout_of(kind, shape, offset),
            start,
            None,
        ));
    }
    eprintln!("worst error {worst:e}");
}

#[test]
fn position_ids_match_the_reference() {
    let mut rng = Rng::new(2);
    for (case, pair_layout) in [PairLayout::Interleaved, PairLayout::HalfSplit]
        .into_iter()
        .enumerate()
    {
        let shape = [3, 4, 37, 64];
        let ids: Vec<u32> = (0..3 * 37)
            .map(|i| {
                if i % 7 == 0 {
                    u32::MAX - i
                } else {
                    rng.next_u64() as u32
                }
            })
            .collect();
        let spec = RopeSpec::new().pair_layout(pair_layout);
        for kind in [Tensor::Bhsd, Tensor::Bshd] {
            check_case(
                &mut rng,
                &spec,
                layout_of(kind, shape, 8 * case as u64),
                0,
                Some(&ids),
            );
        }
    }
}

#[test]
fn decode_step_with_an_offset() {
    // One new token after a KV cache of 4095: position 4095.
    let mut rng = Rng::new(3);
    for pair_layout in [PairLayout::Interleaved, PairLayout::HalfSplit] {
        let spec = RopeSpec::new().pair_layout(pair_layout);
        check_case(&mut rng, &spec, Layout::bhsd([1, 32, 1, 128]), 4095, None);
        check_case(
            &mut rng,
            &spec,
            Layout::bshd(Dims {
                batch: 2,
                heads: 8,
                seq: 1,
                head_dim: 128,
            }),
            4095,
            None,
        );
    }
}

#[test]
fn single_head_long_sequence() {
    let mut rng = Rng::new(4);
    for pair_layout in [PairLayout::Interleaved, PairLayout::HalfSplit] {
        let spec = RopeSpec::new().pair_layout(pair_layout).rotary_dim(32);
        check_case(&mut rng, &spec, Layout::bhsd([1, 1, 4099, 48]), 7, None);
    }
}

#[test]
fn host_path_matches_the_reference() {
    let mut rng = Rng::new(5);
    let layout = Layout::bshd(Dims {
        batch: 2,
        heads: 3,
        seq: 17,
        head_dim: 32,
    });
    let input = rng.values(2 * 3 * 17 * 32);
    let spec = RopeSpec::new().pair_layout(PairLayout::Interleaved);
    let ids: Vec<u32> = (0..2 * 17).map(|i| 1000 + 3 * i).collect();
    let mut gpu = input.clone();
    ctx()
        .rope_host(&spec, layout, &mut gpu, HostPositions::Ids(&ids))
        .expect("rope_host");
    let mut expected: Vec<f64> = input.iter().map(|&v| f64::from(v)).collect();
    reference::rope(&spec, &layout, &mut expected, HostPositions::Ids(&ids));
    assert_matches(&input, &gpu, &expected, TOL, "rope_host");
}

#[test]
fn every_scaling_type_matches_the_reference() {
    use wgpu_posenc::{LongRope, Scaling, Yarn};
    let mut rng = Rng::new(6);
    let phi3 = |k: f64| {
        (0..32)
            .map(|j| 1.0 + k * j as f64 / 32.0)
            .collect::<Vec<f64>>()
    };
    let scalings = [
        Scaling::Linear { factor: 4.0 },
        Scaling::DynamicNtk {
            factor: 2.0,
            original_max_position_embeddings: 32,
        },
        Scaling::NtkAware { factor: 8.0 },
        Scaling::yarn(4.0, 32),
        Scaling::Yarn(Yarn {
            factor: 40.0,
            original_max_position_embeddings: 64,
            beta_fast: 32.0,
            beta_slow: 1.0,
            mscale: 0.707,
            mscale_all_dim: 0.0,
            attention_factor: None,
            truncate: true,
        }),
        Scaling::llama3(),
        Scaling::LongRope(LongRope {
            short_factor: phi3(1.0),
            long_factor: phi3(30.0),
            original_max_position_embeddings: 48,
            max_position_embeddings: 4096,
            attention_factor: None,
        }),
    ];
    for (k, scaling) in scalings.into_iter().enumerate() {
        for pair_layout in [PairLayout::Interleaved, PairLayout::HalfSplit] {
            let spec = RopeSpec::new()
                .pair_layout(pair_layout)
                .scaling(scaling.clone());
            // seq 70 > every original length above: the long-context branch of each scaling.
            check_case(
                &mut rng,
                &spec,
                Layout::bshd(Dims {
                    batch: 1,
                    heads: 3,
                    seq: 70,
                    head_dim: 64,
                }),
                5 * k as u32,
                None,
            );
        }
    }
}
