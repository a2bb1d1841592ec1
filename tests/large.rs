//! Tensors larger than one storage binding, and dispatches of more than 65 535 workgroups,
//! against the reference.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{Rng, assert_matches, ctx, expected_rope, guarded_input, rope_on_buffer};
use wgpu_posenc::Dims;
use wgpu_posenc::{
    ArrayView, HostPositions, Layout, PairLayout, Positions, RopeSpec, SinusoidalSpec, reference,
};

/// A RoPE result larger than one binding compared with the reference in full.
#[test]
fn tensor_larger_than_one_binding() {
    // [1, 40, 8192, 128] f32: 160 MiB, over the 128 MiB binding of lavapipe and llvmpipe.
    // On an adapter with larger bindings, cap them so the split happens all the same.
    let ctx = ctx().clone().with_max_binding_size(128 << 20);
    let shape = [1u64, 40, 8192, 128];
    let n = (40 * 8192 * 128) as usize;
    let input: Vec<f32> = (0..n)
        .map(|i| ((i % 1999) as f32 - 999.5) / 1000.0)
        .collect();
    for (pair_layout, layout) in [
        (PairLayout::HalfSplit, Layout::bhsd(shape)),
        (
            PairLayout::Interleaved,
            Layout::bshd(Dims::from_logical(shape)),
        ),
    ] {
        let spec = RopeSpec::new().pair_layout(pair_layout);
        let (gpu, report) = rope_on_buffer(&ctx, &input, &spec, layout, Positions::Start(100));
        assert!(report.blocks >= 2, "expected a split, got {report:?}");
        let expected = expected_rope(&spec, &layout, &input, HostPositions::Start(100));
        let worst = assert_matches(&input, &gpu, &expected, 1e-6, &format!("{pair_layout:?}"));
        eprintln!("{pair_layout:?}: {report:?}, worst error {worst:e}");
    }
}

#[test]
fn dispatch_of_more_than_65535_workgroups() {
    // Head dim 6: scalar path, 3 pair groups per token; 1.5M tokens = 4.5M invocations =
    // 70 313 workgroups of 64 in one dispatch.
    let shape = [1u64, 1, 1_500_000, 6];
    let layout = Layout::bhsd(shape).with_offset(5);
    let mut rng = Rng::new(22);
    let input = guarded_input(&mut rng, &layout, 7);
    for pair_layout in [PairLayout::Interleaved, PairLayout::HalfSplit] {
        let spec = RopeSpec::new().pair_layout(pair_layout);
        let (gpu, report) = rope_on_buffer(ctx(), &input, &spec, layout, Positions::Start(3));
        assert!(report.max_workgroups > 65_535, "{report:?}");
        let expected = expected_rope(&spec, &layout, &input, HostPositions::Start(3));
        assert_matches(&input, &gpu, &expected, 1e-6, &format!("{pair_layout:?}"));
    }
    // The same through the table kernel: 4.5M rows of 8 (vec4 path, 1 group per row).
    let spec = SinusoidalSpec::new(8);
    let table = ctx()
        .sinusoidal_table_host(&spec, 4_500_000, 0)
        .expect("table");
    let expected = reference::sinusoidal_table(&spec, 4_500_000, 0);
    assert!(common::max_error(&table, &expected) <= 1.5e-7);
}

/// Many blocks: a small binding cap splits random strided views along every axis.
#[test]
fn small_bindings_split_any_layout() {
    let mut rng = Rng::new(23);
    for case in 0..24u64 {
        let cap = [4096u64, 10_000, 70_000][case as usize % 3];
        let ctx = ctx().clone().with_max_binding_size(cap);
        let d = [8u64, 64, 6, 128][case as usize % 4];
        let shape = [rng.range(1, 4), rng.range(1, 6), rng.range(1, 40), d];
        let layout = if case % 2 == 0 {
            Layout::bhsd(shape)
        } else {
            Layout::bshd(Dims::from_logical(shape))
        }
        .with_offset([0, 4, 9][case as usize % 3]);
        let pair_layout = if case % 3 == 0 {
            PairLayout::Interleaved
        } else {
            PairLayout::HalfSplit
        };
        let spec = RopeSpec::new().pair_layout(pair_layout);
        let input = guarded_input(&mut rng, &layout, 5);
        let ids: Vec<u32> = (0..shape[0] * shape[2])
            .map(|_| rng.next_u64() as u32)
            .collect();
        let ids_buffer = common::u32_buffer(&ids);
        let use_ids = case % 4 < 2;
        let (positions, host) = if use_ids {
            (
                Positions::Ids(ArrayView::new(&ids_buffer)),
                HostPositions::Ids(&ids),
            )
        } else {
            (Positions::Start(9), HostPositions::Start(9))
        };
        let (gpu, _) = rope_on_buffer(&ctx, &input, &spec, layout, positions);
        let expected = expected_rope(&spec, &layout, &input, host);
        assert_matches(
            &input,
            &gpu,
            &expected,
            1e-6,
            &format!("case {case}: {layout:?} cap {cap}"),
        );
    }
}

#[test]
fn a_tensor_of_exactly_the_binding_limit_takes_one_binding() {
    // 1 MiB contiguous at offset 0 under a 1 MiB cap: no slack needed, one dispatch; the same
    // at an unaligned offset needs room to align the window, so it splits.
    let shape = [1u64, 4, 512, 128];
    let n = (4 * 512 * 128) as usize;
    let mut rng = Rng::new(24);
    for (offset, blocks) in [(0u64, 1u32), (1, 2)] {
        let ctx = ctx().clone().with_max_binding_size(1 << 20);
        let layout = Layout::bhsd(shape).with_offset(offset);
        let input = guarded_input(&mut rng, &layout, 0);
        assert_eq!(input.len(), n + offset as usize);
        let spec = RopeSpec::new();
        let (gpu, report) = rope_on_buffer(&ctx, &input, &spec, layout, Positions::Start(0));
        assert_eq!(report.blocks, blocks, "offset {offset}");
        let expected = expected_rope(&spec, &layout, &input, HostPositions::Start(0));
        assert_matches(&input, &gpu, &expected, 1e-6, "exact fit");
    }
}

#[test]
fn blocks_of_few_heads_are_dispatched_in_pairs() {
    // BHSD [1, 7, 64, 64] f32 with room for one head a binding: 7 blocks, dispatched as 3
    // pairs (the second head block through the K binding) and one alone.
    let ctx = ctx().clone().with_max_binding_size(64 * 64 * 4 + 64);
    let layout = Layout::bhsd([1, 7, 64, 64]);
    let mut rng = Rng::new(25);
    let input = guarded_input(&mut rng, &layout, 9);
    for pair_layout in [PairLayout::Interleaved, PairLayout::HalfSplit] {
        let spec = RopeSpec::new().pair_layout(pair_layout);
        let (gpu, report) = rope_on_buffer(&ctx, &input, &spec, layout, Positions::Start(5));
        assert_eq!((report.blocks, report.dispatches), (7, 4), "{report:?}");
        let expected = expected_rope(&spec, &layout, &input, HostPositions::Start(5));
        assert_matches(&input, &gpu, &expected, 1e-6, "paired head blocks");
    }
}
