//! f16 storage: RoPE and the sinusoidal kernels within one f16 rounding of the reference,
//! guards untouched, on adapters with SHADER_F16; elsewhere the clear error.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{Rng, assert_one_rounding, ctx, guarded_u16, run_on_u16};
use half::f16;
use wgpu_posenc::Dims;
use wgpu_posenc::{
    Dtype, Error, HostPositions, Layout, PairLayout, Positions, RopeSpec, SinusoidalSpec,
    TensorView, reference,
};

/// f16: 10 stored mantissa bits, smallest normal exponent -14.
const F16: (i32, i32) = (10, -14);

fn value(bits: u16) -> f64 {
    f64::from(f16::from_bits(bits))
}

fn has_f16() -> bool {
    ctx()
        .device()
        .features()
        .contains(wgpu::Features::SHADER_F16)
}

/// Without SHADER_F16 the call must have been refused with the clear error: returns None.
fn on_adapter(result: wgpu_posenc::Result<Vec<u16>>) -> Option<Vec<u16>> {
    if has_f16() {
        Some(result.expect("f16 supported"))
    } else {
        let e = result.expect_err("no f16");
        assert!(matches!(e, Error::MissingFeature { .. }), "{e}");
        None
    }
}

#[test]
fn rope_f16_within_one_rounding() {
    let mut rng = Rng::new(31);
    for (pair_layout, layout) in [
        (
            PairLayout::HalfSplit,
            Layout::bhsd([2, 3, 19, 64]).with_offset(4),
        ),
        (
            PairLayout::Interleaved,
            Layout::bshd(Dims {
                batch: 1,
                heads: 4,
                seq: 9,
                head_dim: 16,
            })
            .with_offset(3),
        ),
        (
            PairLayout::HalfSplit,
            Layout::bhsd([1, 2, 5, 6]).with_offset(1),
        ),
    ] {
        let input = guarded_u16(&mut rng, &layout, 5, |v| f16::from_f32(v).to_bits());
        let spec = RopeSpec::new().pair_layout(pair_layout);
        let Some(gpu) = on_adapter(run_on_u16(&input, |encoder, buffer| {
            let view = TensorView::new(buffer, layout).with_dtype(Dtype::F16);
            ctx()
                .encode_rope(encoder, &spec, &view, Positions::Start(1000))
                .map(drop)
        })) else {
            continue;
        };
        let mut expected: Vec<f64> = input.iter().map(|&v| value(v)).collect();
        reference::rope(&spec, &layout, &mut expected, HostPositions::Start(1000));
        let what = format!("{pair_layout:?} {layout:?}");
        assert_one_rounding(&input, &gpu, value, &expected, F16, &what);
    }
}

#[test]
fn sinusoidal_f16_within_one_rounding() {
    let spec = SinusoidalSpec::new(64);
    let layout = Layout::rows(50, 64).with_offset(8);
    let input: Vec<u16> = (0..8 + 50 * 64 + 3)
        .map(|i| 0x7e00 | (i as u16 & 0xff))
        .collect();
    let Some(gpu) = on_adapter(run_on_u16(&input, |encoder, buffer| {
        let view = TensorView::new(buffer, layout).with_dtype(Dtype::F16);
        ctx()
            .encode_sinusoidal_table(encoder, &spec, &view, 123)
            .map(drop)
    })) else {
        return;
    };
    let mut expected: Vec<f64> = input.iter().map(|&v| value(v)).collect();
    expected[8..8 + 50 * 64].copy_from_slice(&reference::sinusoidal_table(&spec, 50, 123));
    assert_one_rounding(&input, &gpu, value, &expected, F16, "f16 table");
}
