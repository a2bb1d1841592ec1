//! f16 storage: RoPE and the sinusoidal kernels within one f16 rounding of the reference,
//! guards untouched, on adapters with SHADER_F16; elsewhere the clear error.

mod common;

use common::{Rng, ctx};
use half::f16;
use wgpu::util::DeviceExt;
use wgpu_posenc::{
    Dtype, Error, HostPositions, Layout, PairLayout, Positions, RopeSpec, SinusoidalSpec,
    TensorView, reference,
};

fn has_f16() -> bool {
    ctx()
        .device()
        .features()
        .contains(wgpu::Features::SHADER_F16)
}

/// Runs `encode` over f16 data; returns the data after.
fn run_f16(
    data: &[f16],
    encode: impl FnOnce(&mut wgpu::CommandEncoder, &wgpu::Buffer) -> Result<(), Error>,
) -> Result<Vec<f16>, Error> {
    let mut bits: Vec<u16> = data.iter().map(|v| v.to_bits()).collect();
    if bits.len() % 2 == 1 {
        bits.push(0x7e01);
    }
    let device = ctx().device();
    let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("f16 data"),
        contents: bytemuck::cast_slice(&bits),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    encode(&mut encoder, &buffer)?;
    let words = common::read_back(&buffer, encoder);
    let bits: &[u16] = bytemuck::cast_slice(&words);
    Ok(bits[..data.len()]
        .iter()
        .map(|&b| f16::from_bits(b))
        .collect())
}

/// Within one rounding to f16 of the reference value (plus the f32 arithmetic's error).
fn check(input: &[f16], gpu: &[f16], expected: &[f64], what: &str) {
    for (i, ((x, g), &r)) in input.iter().zip(gpu).zip(expected).enumerate() {
        if r.to_bits() == f64::from(*x).to_bits() {
            assert_eq!(
                g.to_bits(),
                x.to_bits(),
                "{what}: element {i} should be untouched"
            );
        } else {
            let ulp = f64::from(
                f16::from_f64(r.abs())
                    .max(f16::MIN_POSITIVE_SUBNORMAL)
                    .to_bits()
                    .checked_add(1)
                    .map(f16::from_bits)
                    .unwrap_or(f16::MAX),
            ) - f64::from(f16::from_f64(r.abs()));
            let err = (f64::from(*g) - r).abs();
            assert!(
                err <= 0.5 * ulp.abs().max(f64::from(f16::EPSILON) * r.abs()) + 2e-6,
                "{what}: element {i}: gpu {g}, reference {r}"
            );
        }
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
            Layout::bshd([1, 4, 9, 16]).with_offset(3),
        ),
        (
            PairLayout::HalfSplit,
            Layout::bhsd([1, 2, 5, 6]).with_offset(1),
        ),
    ] {
        let end = layout.end().expect("layout") as usize;
        let input: Vec<f16> = (0..end + 5)
            .map(|i| {
                if i < layout.offset as usize || i >= end {
                    f16::from_bits(0x7e00 | i as u16 & 0xff)
                } else {
                    f16::from_f32(rng.value())
                }
            })
            .collect();
        let spec = RopeSpec::new().pair_layout(pair_layout);
        let result = run_f16(&input, |encoder, buffer| {
            ctx()
                .encode_rope(
                    encoder,
                    &spec,
                    &TensorView::new(buffer, layout).with_dtype(Dtype::F16),
                    Positions::Start(1000),
                )
                .map(drop)
        });
        if !has_f16() {
            assert!(matches!(result, Err(Error::MissingFeature { .. })));
            continue;
        }
        let gpu = result.expect("f16 rope");
        let mut expected: Vec<f64> = input.iter().map(|&v| f64::from(v)).collect();
        reference::rope(&spec, &layout, &mut expected, HostPositions::Start(1000));
        check(
            &input,
            &gpu,
            &expected,
            &format!("{pair_layout:?} {layout:?}"),
        );
    }
}

#[test]
fn sinusoidal_f16_within_one_rounding() {
    let spec = SinusoidalSpec::new(64);
    let layout = Layout::rows(50, 64).with_offset(8);
    let input: Vec<f16> = (0..8 + 50 * 64 + 3)
        .map(|i| f16::from_bits(0x7e00 | i as u16 & 0xff))
        .collect();
    let result = run_f16(&input, |encoder, buffer| {
        ctx()
            .encode_sinusoidal_table(
                encoder,
                &spec,
                &TensorView::new(buffer, layout).with_dtype(Dtype::F16),
                123,
            )
            .map(drop)
    });
    if !has_f16() {
        assert!(matches!(result, Err(Error::MissingFeature { .. })));
        return;
    }
    let gpu = result.expect("f16 table");
    let mut expected: Vec<f64> = input.iter().map(|&v| f64::from(v)).collect();
    expected[8..8 + 50 * 64].copy_from_slice(&reference::sinusoidal_table(&spec, 50, 123));
    check(&input, &gpu, &expected, "f16 table");
}
