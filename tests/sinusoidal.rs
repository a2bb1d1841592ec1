//! The sinusoidal table and the fused add on the GPU against the f64 reference, and the
//! accuracy contract of the shared trig: cos/sin within 1.5e-7 of the exact value at
//! positions over the whole u32 range.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{Rng, assert_matches, ctx, guarded_input, max_error, poison, run_on_buffer};
use wgpu_posenc::{
    HostPositions, Layout, Positions, SinusoidalLayout, SinusoidalSpec, TensorView, reference,
};

const LAYOUTS: [SinusoidalLayout; 2] = [
    SinusoidalLayout::Interleaved,
    SinusoidalLayout::Concatenated,
];

/// Fills a table of `seq` rows at element `offset` of a buffer poisoned everywhere; returns
/// the buffer's contents after the fill.
fn fill(spec: &SinusoidalSpec, seq: u64, start: u32, offset: u64, guard: usize) -> Vec<f32> {
    let layout = Layout::rows(seq, spec.d_model).with_offset(offset);
    let input: Vec<f32> = (0..(offset + seq * spec.d_model) as usize + guard)
        .map(poison)
        .collect();
    run_on_buffer(&input, |encoder, buffer| {
        ctx()
            .encode_sinusoidal_table(encoder, spec, &TensorView::new(buffer, layout), start)
            .expect("encode");
    })
}

/// Checks a table fill: guards untouched, every table element written and within `tol`.
fn check_fill(spec: &SinusoidalSpec, seq: u64, start: u32, offset: u64, tol: f64) -> f64 {
    let guard = 11;
    let out = fill(spec, seq, start, offset, guard);
    let (o, n) = (offset as usize, (seq * spec.d_model) as usize);
    for (i, v) in out[..o].iter().chain(&out[o + n..]).enumerate() {
        assert!(v.is_nan(), "guard element {i} overwritten: {v}");
    }
    assert_eq!(
        out[o + n..].iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        (o + n..o + n + guard)
            .map(|i| poison(i).to_bits())
            .collect::<Vec<_>>()
    );
    let expected = reference::sinusoidal_table(spec, seq, start);
    let err = max_error(&out[o..o + n], &expected);
    assert!(
        err <= tol,
        "{spec:?} seq {seq} start {start}: error {err:e} > {tol:e}"
    );
    err
}

#[test]
fn table_matches_the_reference_in_both_layouts() {
    for layout in LAYOUTS {
        for (d, seq, offset) in [(512, 300, 0), (6, 1001, 5), (64, 65, 8), (10, 7, 0)] {
            check_fill(
                &SinusoidalSpec::new(d).layout(layout),
                seq,
                0,
                offset,
                1.5e-7,
            );
        }
        let spec = SinusoidalSpec::new(128).layout(layout).base(500.0);
        check_fill(&spec, 100, 12_345, 4, 1.5e-7);
    }
}

#[test]
fn cos_and_sin_are_within_contract_over_the_whole_u32_range() {
    // First and last 4096 positions, plus 64 windows of 128 spread over the range.
    let spec = SinusoidalSpec::new(256);
    let mut starts = vec![(0u32, 4096u64), (u32::MAX - 4095, 4096)];
    let mut rng = Rng::new(7);
    for k in 0..64u64 {
        let lo = (k << 26) as u32;
        starts.push((lo + rng.range(0, (1 << 26) - 128) as u32, 128));
    }
    let mut worst = 0.0f64;
    for (start, seq) in starts {
        worst = worst.max(check_fill(&spec, seq, start, 0, 1.5e-7));
    }
    eprintln!("max |error| of sin and cos over the u32 range: {worst:e}");
}

#[test]
fn fused_add_matches_the_reference() {
    let mut rng = Rng::new(8);
    for sin_layout in LAYOUTS {
        for (shape, offset, start) in [
            ([2, 1, 33, 64], 0, 0),
            ([3, 1, 9, 6], 3, 77),
            ([1, 2, 50, 16], 4, u32::MAX - 49),
        ] {
            let spec = SinusoidalSpec::new(shape[3]).layout(sin_layout);
            let layout = Layout::bhsd(shape).with_offset(offset);
            let input = guarded_input(&mut rng, &layout, 9);
            let scale = (shape[3] as f32).sqrt();
            let gpu = run_on_buffer(&input, |encoder, buffer| {
                ctx()
                    .encode_sinusoidal_add(
                        encoder,
                        &spec,
                        &TensorView::new(buffer, layout),
                        Positions::Start(start),
                        scale,
                    )
                    .expect("encode");
            });
            let mut expected: Vec<f64> = input.iter().map(|&v| f64::from(v)).collect();
            reference::sinusoidal_add(
                &spec,
                &layout,
                &mut expected,
                HostPositions::Start(start),
                f64::from(scale),
            );
            // |x * scale| < 8: a few f32 roundings of that size, plus the PE error.
            assert_matches(
                &input,
                &gpu,
                &expected,
                2e-6,
                &format!("{spec:?} {layout:?}"),
            );
        }
    }
}

#[test]
fn host_table_and_add_match_the_reference() {
    let spec = SinusoidalSpec::new(96).layout(SinusoidalLayout::Concatenated);
    let table = ctx().sinusoidal_table_host(&spec, 40, 3).expect("table");
    assert!(max_error(&table, &reference::sinusoidal_table(&spec, 40, 3)) <= 1.5e-7);

    let mut rng = Rng::new(9);
    let layout = Layout::bsd(2, 40, 96);
    let input = rng.values(2 * 40 * 96);
    let mut gpu = input.clone();
    ctx()
        .sinusoidal_add_host(&spec, layout, &mut gpu, HostPositions::Start(3), 0.5)
        .expect("add");
    let mut expected: Vec<f64> = input.iter().map(|&v| f64::from(v)).collect();
    reference::sinusoidal_add(&spec, &layout, &mut expected, HostPositions::Start(3), 0.5);
    assert_matches(&input, &gpu, &expected, 1e-6, "sinusoidal_add_host");
}

#[test]
fn stepped_angles_stay_exact_to_the_end_of_the_u32_range() {
    // Long tables give each invocation several consecutive tokens whose angles are stepped by
    // 64-bit adds; the last 200 000 positions of the u32 range cross many carries.
    for layout in LAYOUTS {
        let spec = SinusoidalSpec::new(64).layout(layout);
        let start = u32::MAX - 199_999;
        let table = ctx()
            .sinusoidal_table_host(&spec, 200_000, start)
            .expect("table");
        let expected = reference::sinusoidal_table(&spec, 200_000, start);
        let err = max_error(&table, &expected);
        assert!(err <= 1.5e-7, "{layout:?}: {err:e}");
    }
}

#[test]
fn stepped_add_over_heads_with_a_partial_last_block() {
    // 2 x 66 001 tokens x 2 invocation groups: two tokens per invocation, the last block of
    // each batch row holding one; two pair groups per invocation (d = 16); two heads.
    let mut rng = Rng::new(10);
    for sin_layout in LAYOUTS {
        let spec = SinusoidalSpec::new(16).layout(sin_layout);
        let layout = Layout::bhsd([2, 2, 66_001, 16]).with_offset(4);
        let input = guarded_input(&mut rng, &layout, 8);
        let mut gpu = input.clone();
        ctx()
            .sinusoidal_add_host(&spec, layout, &mut gpu, HostPositions::Start(123), 0.5)
            .expect("add");
        let mut expected: Vec<f64> = input.iter().map(|&v| f64::from(v)).collect();
        reference::sinusoidal_add(
            &spec,
            &layout,
            &mut expected,
            HostPositions::Start(123),
            0.5,
        );
        assert_matches(&input, &gpu, &expected, 1e-6, "stepped add");
    }
}
