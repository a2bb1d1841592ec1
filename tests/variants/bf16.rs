//! RoPE on bf16 tensors, within one rounding of the reference.

use super::common::{Rng, assert_one_rounding, ctx, guarded_u16, run_on_u16};
use wgpu_posenc::Dims;
use wgpu_posenc::{HostPositions, Layout, PairLayout, Positions, RopeSpec, TensorView, reference};

#[test]
fn bf16_within_one_rounding() {
    use half::bf16;
    // bf16: 7 stored mantissa bits, smallest normal exponent -126.
    const BF16: (i32, i32) = (7, -126);
    let value = |b: u16| f64::from(bf16::from_bits(b).to_f32());
    let mut rng = Rng::new(47);
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
        (
            PairLayout::Interleaved,
            Layout::bhsd([1, 2, 7, 10]).with_offset(2),
        ),
    ] {
        let input = guarded_u16(&mut rng, &layout, 5, |v| bf16::from_f32(v).to_bits());
        let spec = RopeSpec::new().pair_layout(pair_layout);
        let gpu = run_on_u16(&input, |encoder, buffer| {
            let view = TensorView::new(buffer, layout).with_dtype(wgpu_posenc::Dtype::BF16);
            ctx()
                .encode_rope(encoder, &spec, &view, Positions::Start(999))
                .map(drop)
        })
        .expect("bf16 runs on every adapter");
        let mut expected: Vec<f64> = input.iter().map(|&v| value(v)).collect();
        reference::rope(&spec, &layout, &mut expected, HostPositions::Start(999));
        assert_one_rounding(&input, &gpu, value, &expected, BF16, &format!("{layout:?}"));
    }
}
