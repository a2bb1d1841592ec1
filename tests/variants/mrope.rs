//! M-RoPE with contiguous and interleaved sections against the reference.

use super::common::{Rng, assert_matches, bits, ctx, guarded_input, widen};
use super::{LAYOUTS, TOL};
use wgpu_posenc::Dims;
use wgpu_posenc::{Error, HostPositions, Layout, MRopeOrder, RopeSpec, reference};

#[test]
fn mrope_contiguous_and_interleaved_sections() {
    let mut rng = Rng::new(48);
    // Qwen2-VL: head_dim 128, mrope_section [16, 24, 24]; Qwen3-VL interleaved [24, 20, 20];
    // ERNIE 4.5 VL: h, w alternating over 44 pairs, then 20 t pairs.
    for (section, order) in [
        ([16, 24, 24], MRopeOrder::Chunks),
        ([24, 20, 20], MRopeOrder::Interleaved),
        ([20, 22, 22], MRopeOrder::HwThenT),
    ] {
        for pair_layout in LAYOUTS {
            let spec = RopeSpec::new()
                .pair_layout(pair_layout)
                .base(1_000_000.0)
                .mrope_order(section, order);
            let layout = Layout::bshd(Dims {
                batch: 2,
                heads: 3,
                seq: 20,
                head_dim: 128,
            });
            let ids: Vec<u32> = (0..3 * 2 * 20)
                .map(|i| (rng.next_u64() % 5000) as u32 + i % 7)
                .collect();
            let x = guarded_input(&mut rng, &layout, 3);
            let mut gpu = x.clone();
            ctx()
                .rope_host(&spec, layout, &mut gpu, HostPositions::Axes(&ids))
                .expect("mrope");
            let mut expected = widen(&x);
            reference::rope(&spec, &layout, &mut expected, HostPositions::Axes(&ids));
            assert_matches(
                &x,
                &gpu,
                &expected,
                TOL,
                &format!("mrope {section:?} {order:?}"),
            );
        }
    }
    // ERNIE's h and w halves are stacked pair by pair: unequal ones are refused, as HF's
    // torch.stack refuses them.
    let bad = RopeSpec::new().mrope_order([20, 23, 21], MRopeOrder::HwThenT);
    let layout = Layout::bshd(Dims {
        batch: 1,
        heads: 1,
        seq: 2,
        head_dim: 128,
    });
    let mut x = guarded_input(&mut rng, &layout, 3);
    assert!(matches!(
        ctx().rope_host(&bad, layout, &mut x, HostPositions::Axes(&[1; 6])),
        Err(Error::InvalidMRopeSection { .. })
    ));
    // Text tokens have the same position on every axis: plain RoPE, bit for bit.
    let layout = Layout::bshd(Dims {
        batch: 1,
        heads: 2,
        seq: 10,
        head_dim: 128,
    });
    let x = guarded_input(&mut rng, &layout, 3);
    let pos: Vec<u32> = (0..10).map(|i| 40 + i).collect();
    let axes: Vec<u32> = pos.iter().cycle().take(30).copied().collect();
    let (mut a, mut b) = (x.clone(), x.clone());
    let spec = RopeSpec::new().base(1_000_000.0);
    ctx()
        .rope_host(
            &spec.clone().mrope([16, 24, 24], false),
            layout,
            &mut a,
            HostPositions::Axes(&axes),
        )
        .expect("axes");
    ctx()
        .rope_host(&spec, layout, &mut b, HostPositions::Ids(&pos))
        .expect("ids");
    assert_eq!(bits(&a), bits(&b));
    // Sections that do not cover the pairs are refused.
    let e = ctx()
        .rope_host(
            &RopeSpec::new().mrope([16, 24, 20], false),
            layout,
            &mut a,
            HostPositions::Axes(&axes),
        )
        .expect_err("sections");
    assert!(
        matches!(e, Error::InvalidMRopeSection { pairs: 64, .. }),
        "{e}"
    );
    let e = ctx()
        .rope_host(&RopeSpec::new(), layout, &mut a, HostPositions::Axes(&axes))
        .expect_err("no sections");
    assert!(matches!(e, Error::PositionsMismatch(_)), "{e}");
}
