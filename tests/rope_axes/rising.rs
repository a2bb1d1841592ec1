//! LTX's form: frequencies rising from `pi/2` on each axis ([`RopeSpec::axes_rising`]) after
//! lanes that pass through ([`RopeSpec::leading_lanes`]), against the f64 reference (Q and K
//! in one dispatch, strided views in poisoned buffers) and refused where it cannot run.

use super::axes_of;
use super::common::{Rng, assert_matches, ctx, guarded_input, run_on_buffers, u32_buffer, widen};
use wgpu_posenc::{
    ArrayView, CacheIndex, Error, KvCache, Layout, MRopeOrder, PairLayout, QkvCall, RopeCall,
    RopeSpec, Scaling, TensorView, reference,
};

/// LTX-Video's rotation of an inner dimension `dim`: `dim / 6` rising frequencies per axis,
/// the axes interleaved, after `dim % 6` lanes.
fn ltx(dim: u64) -> RopeSpec {
    let n = dim / 6;
    RopeSpec::new()
        .pair_layout(PairLayout::Interleaved)
        .axes_rising([n, n, n], MRopeOrder::Interleaved)
        .leading_lanes(dim % 6)
        .rotary_dim(6 * n)
}

/// The reference's rising list is `(pi/2) base^(k/(n-1))` as f64 computes it, to f64's
/// rounding: 1 `pi/2` at the first pair, `(pi/2) base` at the last, each axis its own.
#[test]
fn rising_frequencies_go_from_a_quarter_turn_to_base_quarter_turns() {
    for (n, base) in [(10u64, 1e4), (341, 1e4), (1, 1e4), (7, 20.0)] {
        let spec = RopeSpec::new()
            .axes_rising([n, n, 0], MRopeOrder::Chunks)
            .base(base);
        let (f, factor) = reference::frequencies(&spec, 4 * n, 0).expect("frequencies");
        assert_eq!(factor, 1.0);
        assert_eq!(f.len() as u64, 2 * n);
        for (j, &(hi, lo)) in f.iter().enumerate() {
            let k = j as u64 % n;
            let e = if n == 1 {
                0.0
            } else {
                k as f64 / (n - 1) as f64
            };
            let want = std::f64::consts::FRAC_PI_2 * base.powf(e);
            assert!(
                ((hi + lo) - want).abs() <= 4.0 * f64::EPSILON * want,
                "n {n} base {base} pair {j}: {hi} + {lo}, want {want}"
            );
        }
        assert_eq!(f[0].0, std::f64::consts::FRAC_PI_2);
    }
}

/// Q and K in one dispatch after 2 or 4 leading lanes (LTX-Video's 2048 and a head of 52
/// with a tail), integer and f32 positions (LTX's coordinates in (-1, 1), and far ones), both
/// pair layouts: every rotated lane within 2.5e-7 of the reference, the leading lanes, the
/// tail, the gaps and the guards untouched.
#[test]
fn rising_frequencies_after_leading_lanes_match_the_reference() {
    let mut rng = Rng::new(2031);
    let (b, s) = (2u64, 23u64);
    let n = (b * s) as usize;
    let unit = |rng: &mut Rng| rng.next_u64() as f64 / u64::MAX as f64;
    let coords: Vec<f32> = (0..3 * n)
        .map(|i| match i % 3 {
            0 => (unit(&mut rng) * 2.0 - 1.0) as f32,
            1 => ((unit(&mut rng) - 0.5) * 2e5) as f32,
            _ => (2.0 * (i as f64 / 64.0) / 20.0 - 1.0) as f32,
        })
        .collect();
    let ints: Vec<u32> = (0..3 * n).map(|_| rng.range(0, 1 << 20) as u32).collect();
    for pair in [PairLayout::Interleaved, PairLayout::HalfSplit] {
        for (spec, d) in [
            (ltx(2048).pair_layout(pair), 2048u64),
            (
                RopeSpec::new()
                    .pair_layout(pair)
                    .axes_rising([4, 8, 6], MRopeOrder::Chunks)
                    .leading_lanes(4)
                    .rotary_dim(36),
                52,
            ),
        ] {
            for float in [true, false] {
                let words: Vec<u32> = match float {
                    true => coords.iter().map(|c| c.to_bits()).collect(),
                    false => ints.clone(),
                };
                check_qk(&spec, [b, s, d], &words, float);
            }
        }
    }
}

/// Rotates strided Q (3 heads) and K (1 head) views in one call and compares both with the
/// reference.
pub(super) fn check_qk(spec: &RopeSpec, [b, s, d]: [u64; 3], words: &[u32], float: bool) {
    let row = d + 3;
    let layout = |h: u64| Layout::strided([b, h, s, d], [h * s * row, s * row, row]).with_offset(5);
    let (lq, lk) = (layout(3), layout(1));
    let mut rng = Rng::new(d);
    let (q, k) = (
        guarded_input(&mut rng, &lq, 6),
        guarded_input(&mut rng, &lk, 6),
    );
    let ids = u32_buffer(words);
    let out = run_on_buffers(&[&q, &k], |encoder, bufs| {
        let call = RopeCall::new(
            TensorView::new(&bufs[0], lq),
            axes_of(ArrayView::new(&ids), float),
        )
        .with_k(TensorView::new(&bufs[1], lk));
        ctx()
            .encode_rope_call(encoder, spec, &call)
            .expect("encode");
    });
    for (input, got, l, what) in [(&q, &out[0], &lq, "Q"), (&k, &out[1], &lk, "K")] {
        let mut want = widen(input);
        reference::rope(spec, l, &mut want, axes_of(words, float));
        let worst = assert_matches(input, got, &want, 2.5e-7, &format!("{what} {spec:?}"));
        assert!(worst > 0.0, "{what}: nothing rotated");
    }
}

/// Leading lanes that leave no room for the rotated ones, out of place, and in the fused
/// call are typed errors; rising lists take no scaling.
#[test]
fn leading_lanes_and_rising_lists_are_refused_where_they_cannot_run() {
    let e = ctx()
        .rope(&ltx(2048).leading_lanes(4), 2048)
        .map(drop)
        .expect_err("past the head");
    assert!(
        matches!(
            e,
            Error::InvalidLeadingLanes {
                leading_lanes: 4,
                rotary_dim: 2046,
                head_dim: 2048
            }
        ),
        "{e}"
    );
    let e = ctx()
        .rope(&RopeSpec::new().leading_lanes(64), 64)
        .map(drop)
        .expect_err("no lanes");
    assert!(matches!(e, Error::InvalidLeadingLanes { .. }), "{e}");
    let scaled = ltx(2048).scaling(Scaling::Linear { factor: 2.0 });
    let e = ctx().rope(&scaled, 2048).map(drop).expect_err("scaling");
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
    // A valid spec, but out of place and in the fused call.
    let spec = RopeSpec::new().leading_lanes(2).rotary_dim(60);
    let device = ctx().device();
    let buffer = |size: u64| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        })
    };
    let (a, o) = (buffer(4096), buffer(4096));
    let shape = wgpu_posenc::Dims {
        batch: 1,
        seq: 4,
        heads: 2,
        head_dim: 64,
    };
    let view = |buf| TensorView::new(buf, Layout::bshd(shape));
    let mut encoder = device.create_command_encoder(&Default::default());
    let call = RopeCall::new(view(&a), wgpu_posenc::Positions::Start(0)).with_output(view(&o));
    let e = ctx()
        .encode_rope_call(&mut encoder, &spec, &call)
        .expect_err("out of place");
    assert!(e.to_string().contains("in place"), "{e}");
    let qkv = TensorView::new(&a, Layout::bshd(wgpu_posenc::Dims { heads: 3, ..shape }));
    let one = Layout::bshd(wgpu_posenc::Dims { heads: 1, ..shape });
    let (kc, vc) = (buffer(1024), buffer(1024));
    let cache = KvCache {
        k: TensorView::new(&kc, one),
        v: TensorView::new(&vc, one),
        index: CacheIndex::Position,
        overflow_flag: None,
    };
    let fused = QkvCall::new(qkv, 1, wgpu_posenc::Positions::Start(0), cache);
    let e = ctx()
        .rope(&spec, 64)
        .and_then(|r| r.encode_qkv(&mut encoder, &fused))
        .expect_err("fused");
    assert!(e.to_string().contains("encode_rope"), "{e}");
}
