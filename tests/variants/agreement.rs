//! Cross-checks that pin conventions: shards against the unsharded call, the two pair layouts
//! after the permutation, a prepared rope against the one-shot calls, each bit for bit.

use super::TOL;
use super::common::{
    Rng, assert_matches, bits, ctx, f32_buffer, guarded_input, run_on_buffers, widen,
};
use wgpu_posenc::Dims;
use wgpu_posenc::{
    Error, HostPositions, Layout, PairLayout, Positions, RopeSpec, Scaling, TensorView, reference,
};

#[test]
fn shards_give_the_unsharded_result_bit_for_bit() {
    let mut rng = Rng::new(49);
    let shape = [1u64, 8, 96, 64];
    let layout = Layout::bhsd(shape);
    let x = rng.values(8 * 96 * 64);
    let spec = RopeSpec::new()
        .pair_layout(PairLayout::HalfSplit)
        .base(500_000.0);
    let mut whole = x.clone();
    ctx()
        .rope_host(&spec, layout, &mut whole, HostPositions::Start(1000))
        .expect("whole");
    // Sequence parallel: three shards of 32 tokens, each its own context and buffer, with
    // its global start offset; then the same with explicit ids.
    for use_ids in [false, true] {
        let mut joined = vec![0.0f32; x.len()];
        for shard in 0..3u64 {
            let own = wgpu_posenc::PosEnc::with_default_adapter().expect("context");
            let shard_layout = Layout::bhsd([1, 8, 32, 64]);
            let mut part: Vec<f32> = (0..8)
                .flat_map(|h| {
                    let at = ((h * 96 + shard * 32) * 64) as usize;
                    x[at..at + 32 * 64].to_vec()
                })
                .collect();
            let ids: Vec<u32> = (0..32).map(|s| 1000 + (shard * 32 + s) as u32).collect();
            let positions = if use_ids {
                HostPositions::Ids(&ids)
            } else {
                HostPositions::Start(1000 + 32 * shard as u32)
            };
            own.rope_host(&spec, shard_layout, &mut part, positions)
                .expect("shard");
            for h in 0..8u64 {
                let at = ((h * 96 + shard * 32) * 64) as usize;
                joined[at..at + 32 * 64]
                    .copy_from_slice(&part[(h * 32 * 64) as usize..((h + 1) * 32 * 64) as usize]);
            }
        }
        assert_eq!(
            bits(&joined),
            bits(&whole),
            "sequence shards (ids: {use_ids})"
        );
    }
    // Tensor parallel: heads 2..5 through a strided view of the whole buffer.
    let sub = Layout::strided([1, 3, 96, 64], layout.strides).with_offset(2 * 96 * 64);
    let mut part = x.clone();
    ctx()
        .rope_host(&spec, sub, &mut part, HostPositions::Start(1000))
        .expect("heads");
    let head = |v: &[f32], h: usize| bits(&v[h * 96 * 64..(h + 1) * 96 * 64]);
    for h in 0..8 {
        if (2..5).contains(&h) {
            assert_eq!(head(&part, h), head(&whole, h), "head {h}");
        } else {
            assert_eq!(head(&part, h), head(&x, h), "head {h} must be untouched");
        }
    }
}

#[test]
fn interleaved_and_half_split_agree_after_the_permutation() {
    // Interleaved pair j is (2j, 2j+1); half-split pair j is (j, j + r/2). Permuting the head
    // dimension accordingly turns one convention into the other, bit for bit.
    let mut rng = Rng::new(50);
    let (d, r) = (64usize, 48usize);
    let layout = Layout::bshd(Dims {
        batch: 2,
        heads: 3,
        seq: 17,
        head_dim: d as u64,
    });
    let x = rng.values(2 * 3 * 17 * d);
    let perm = |v: &[f32]| -> Vec<f32> {
        v.chunks(d)
            .flat_map(|row| {
                let mut out = row.to_vec();
                for j in 0..r / 2 {
                    out[j] = row[2 * j];
                    out[j + r / 2] = row[2 * j + 1];
                }
                out
            })
            .collect()
    };
    let spec = RopeSpec::new().rotary_dim(r as u64);
    let mut a = x.clone();
    ctx()
        .rope_host(
            &spec.clone().pair_layout(PairLayout::Interleaved),
            layout,
            &mut a,
            HostPositions::Start(77),
        )
        .expect("i");
    let mut b = perm(&x);
    ctx()
        .rope_host(
            &spec.pair_layout(PairLayout::HalfSplit),
            layout,
            &mut b,
            HostPositions::Start(77),
        )
        .expect("h");
    assert_eq!(bits(&perm(&a)), bits(&b));
}

#[test]
fn a_prepared_rope_gives_the_one_shot_results_bit_for_bit() {
    let mut rng = Rng::new(53);
    for scaling in [
        Scaling::llama3(),
        Scaling::DynamicNtk {
            factor: 2.0,
            original_max_position_embeddings: 40,
        },
    ] {
        let spec = RopeSpec::new().base(500_000.0).scaling(scaling);
        let rope = ctx().rope(&spec, 64).expect("prepared");
        let layout = Layout::bshd(Dims {
            batch: 1,
            heads: 4,
            seq: 3,
            head_dim: 64,
        });
        // A decode loop: the same spec at growing positions, through both forms.
        for step in [0u32, 38, 39, 40, 41, 100, 38] {
            let x = guarded_input(&mut rng, &layout, 3);
            let out = run_on_buffers(&[&x, &x], |encoder, b| {
                rope.encode(
                    encoder,
                    &TensorView::new(&b[0], layout),
                    Positions::Start(step),
                )
                .expect("prepared");
                ctx()
                    .encode_rope(
                        encoder,
                        &spec,
                        &TensorView::new(&b[1], layout),
                        Positions::Start(step),
                    )
                    .expect("one shot");
            });
            assert_eq!(bits(&out[0]), bits(&out[1]), "step {step}");
            let mut expected = widen(&x);
            reference::rope(&spec, &layout, &mut expected, HostPositions::Start(step));
            assert_matches(&x, &out[0], &expected, TOL, "prepared");
        }
    }
    // A tensor of another head dim is an error.
    let rope = ctx().rope(&RopeSpec::new(), 64).expect("prepared");
    let b = f32_buffer(&[0.0; 256]);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let e = rope
        .encode(
            &mut encoder,
            &TensorView::new(&b, Layout::bhsd([1, 1, 2, 128])),
            Positions::Start(0),
        )
        .expect_err("head_dim 128 for a 64 spec");
    assert!(
        matches!(
            e,
            Error::DimMismatch {
                spec: 64,
                tensor: 128
            }
        ),
        "{e}"
    );
}
