//! Two views of one buffer (Q and K, or source and output) at random shapes and offsets,
//! drawn and run against the reference.

use super::common::{self, ctx, poison, widen};
use super::{buffer, check, read, values};

use proptest::prelude::*;
use wgpu_posenc::{
    Dtype, HostPositions, Layout, PairLayout, Positions, RopeCall, RopeSpec, TensorView, reference,
};

/// Q and K, or source and output, in one buffer: random shapes and a random offset of the
/// second view, so that some share elements (an error), some share only aligned binding
/// windows (one binding for both), and some are far apart (two bindings).
#[derive(Clone, Debug)]
pub struct OneBuffer {
    qk: bool,
    layout: Layout,
    k_heads: u64,
    shift: u64,
    interleaved: bool,
    start: u32,
    seed: u64,
}

pub fn one_buffer_strategy() -> impl Strategy<Value = OneBuffer> {
    (
        any::<bool>(),
        (
            1u64..3,
            1u64..5,
            1u64..20,
            prop::sample::select(vec![4u64, 8, 16, 32, 64]),
        ),
        any::<bool>(),
        0u64..4,
        prop_oneof![0u64..300, 0u64..20_000],
        any::<bool>(),
        0u32..100_000,
        any::<u64>(),
    )
        .prop_map(
            |(qk, (b, h, s, d), bshd, k_heads, shift, interleaved, start, seed)| {
                let layout = if bshd {
                    Layout::bshd(wgpu_posenc::Dims {
                        batch: b,
                        heads: h,
                        seq: s,
                        head_dim: d,
                    })
                } else {
                    Layout::bhsd([b, h, s, d])
                };
                OneBuffer {
                    qk,
                    layout,
                    k_heads,
                    shift,
                    interleaved,
                    start,
                    seed,
                }
            },
        )
}

pub fn run_one_buffer(case: &OneBuffer) -> Result<(), String> {
    let a = case.layout;
    let [b, h, s, d] = a.shape;
    // The second view: K with its own heads (strides of a BSHD/BHSD tensor of that many
    // heads), or the output of the same shape; both `shift` elements in.
    let second = if case.qk {
        let k = if a.strides[2] > a.strides[1] {
            Layout::bshd(wgpu_posenc::Dims {
                batch: b,
                heads: case.k_heads,
                seq: s,
                head_dim: d,
            })
        } else {
            Layout::bhsd([b, case.k_heads, s, d])
        };
        k.with_offset(case.shift)
    } else {
        Layout::strided(a.shape, a.strides).with_offset(case.shift)
    };
    let end = a.end().map_err(|e| e.to_string())?;
    let end = end.max(second.end().map_err(|e| e.to_string())?) as usize + 7;
    let mut rng = common::Rng::new(case.seed);
    let mut x: Vec<f32> = (0..end).map(poison).collect();
    for l in [&a, &second] {
        for (bb, hh, ss) in (0..l.shape[0]).flat_map(|bb| {
            (0..l.shape[1]).flat_map(move |hh| (0..l.shape[2]).map(move |ss| (bb, hh, ss)))
        }) {
            let at = reference::row_start(l, bb, hh, ss) as usize;
            for v in &mut x[at..at + d as usize] {
                *v = rng.value();
            }
        }
    }
    let spec = RopeSpec::new().pair_layout(if case.interleaved {
        PairLayout::Interleaved
    } else {
        PairLayout::HalfSplit
    });
    let buf = buffer(bytemuck::cast_slice(&x));
    let host = HostPositions::Start(case.start);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let (va, vb) = (TensorView::new(&buf, a), TensorView::new(&buf, second));
    let result = if case.qk {
        ctx().encode_rope_qk(&mut encoder, &spec, &va, &vb, Positions::Start(case.start))
    } else {
        let call = RopeCall::new(va, Positions::Start(case.start)).with_output(vb);
        ctx().encode_rope_call(&mut encoder, &spec, &call)
    };
    let _ = h;
    if let Err(e) = result {
        // Only sharing elements (or a device limit) may refuse the call.
        return match e {
            wgpu_posenc::Error::TensorsOverlap { .. } => Ok(()),
            other => Err(format!("refused: {other}")),
        };
    }
    let got = values(
        &{
            ctx().queue().submit([encoder.finish()]);
            read(&buf)
        },
        Dtype::F32,
        x.len(),
    );
    let before = widen(&x);
    let mut want = before.clone();
    if case.qk {
        reference::rope(&spec, &a, &mut want, host);
        reference::rope(&spec, &second, &mut want, host);
    } else {
        reference::rope_out(&spec, &a, &before, &second, &mut want, host, None);
    }
    check(&before, &got, &want, Dtype::F32, spec.cos_sin_bf16)
}
