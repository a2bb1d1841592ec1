//! The bridge on burn's own tensors, on burn's wgpu runtime: every result against the
//! crate's f64 reference (and burn's `RotaryEncoding` where its f32 angles are still
//! accurate), with burn tensors allocated before and after each target in the same pool
//! checked unchanged, views that are not contiguous, shared buffers, and burn operations
//! before and after each call in one stream of work with no sync in between.

mod common;

use burn::nn::RotaryEncodingConfig;
use burn::tensor::{DType, Int, Tensor, TensorData};
use common::{Rng, bridge, buffer_of, fused, max_diff, read, rope_reference, tensor};
use wgpu_posenc::reference::{self, HostCacheIndex};
use wgpu_posenc::{
    HostPositions, Layout, NormWeight, PairLayout, Positions, QkNorm, RopeSpec, SinusoidalSpec,
};
use wgpu_posenc_burn::{BurnPosEnc, Error};

/// Burn tensors allocated around a target, and their values: none may change.
struct Neighbours(Vec<(Tensor<1>, Vec<f32>)>);

impl Neighbours {
    fn new(rng: &mut Rng, sizes: &[usize]) -> Self {
        Self(
            sizes
                .iter()
                .map(|&n| {
                    let v = rng.values(n);
                    (tensor(v.clone(), [n]), v)
                })
                .collect(),
        )
    }

    fn check(self, what: &str) {
        for (t, v) in self.0 {
            assert_eq!(read(t), v, "{what}: a neighbouring tensor changed");
        }
    }
}

#[test]
fn rope_in_place_matches_the_reference_and_leaves_the_pool_alone() {
    let b = bridge();
    let mut rng = Rng(1);
    for (pair_layout, shape) in [
        (PairLayout::HalfSplit, [2, 4, 17, 64]),
        (PairLayout::Interleaved, [1, 3, 33, 128]),
    ] {
        let spec = RopeSpec::new().pair_layout(pair_layout).base(500_000.0);
        let rope = b.rope(&spec, shape[3] as u64).expect("rope");
        let before = Neighbours::new(&mut rng, &[7, 1000]);
        let x = rng.values(shape.iter().product());
        let t = tensor(x.clone(), shape);
        let after = Neighbours::new(&mut rng, &[5, 4096]);
        // CubeCL pools them: some neighbour lives in the target's own buffer.
        let pooled = before
            .0
            .iter()
            .chain(&after.0)
            .any(|(n, _)| buffer_of(n) == buffer_of(&t));
        assert!(
            pooled,
            "no neighbour shares the target's buffer: the check would be empty"
        );
        let got = b.apply(&rope, t, Positions::Start(9000)).expect("apply");
        let want = rope_reference(&spec, shape, &x, HostPositions::Start(9000));
        let err = max_diff(&read(got), &want);
        assert!(err < 2e-7 * 4.0, "{pair_layout:?}: {err:e}");
        before.check("before");
        after.check("after");
    }
}

#[test]
fn positions_from_burn_int_tensors() {
    let b = bridge();
    let mut rng = Rng(2);
    let shape = [2, 3, 5, 32];
    let spec = RopeSpec::new();
    let rope = b.rope(&spec, 32).expect("rope");
    let ids: Vec<u32> = (0..10).map(|i| (i * 7919 + 3) % 100_000).collect();
    let x = rng.values(shape.iter().product());
    for dtype in [DType::I32, DType::U32] {
        let ids_t = Tensor::<1, Int>::from_data(
            TensorData::new(ids.iter().map(|&i| i as i32).collect::<Vec<_>>(), [10]),
            b.device(),
        )
        .cast(dtype);
        let got = b
            .apply(&rope, tensor(x.clone(), shape), Positions::Ids(ids_t))
            .expect("apply");
        let want = rope_reference(&spec, shape, &x, HostPositions::Ids(&ids));
        let err = max_diff(&read(got), &want);
        assert!(err < 1e-6, "{dtype:?}: {err:e}");
    }
}

#[test]
fn agrees_with_burns_rotary_encoding_on_short_positions() {
    let b = bridge();
    let mut rng = Rng(3);
    let shape = [1, 4, 32, 64];
    let x = rng.values(shape.iter().product());
    let burn_rope = RotaryEncodingConfig::new(64, 64).init(b.device());
    let theirs = read(burn_rope.forward(tensor(x.clone(), shape)));
    // burn pairs (2j, 2j + 1) with theta 10 000.
    let spec = RopeSpec::new().pair_layout(PairLayout::Interleaved);
    let rope = b.rope(&spec, 64).expect("rope");
    let ours = read(
        b.apply(&rope, tensor(x, shape), Positions::Start(0))
            .expect("apply"),
    );
    let err = ours
        .iter()
        .zip(&theirs)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    // burn's angles are f32 products: at positions below 32 they are within a few ulps.
    assert!(err < 2e-5, "{err:e}");
}

#[test]
fn views_that_are_not_contiguous() {
    let b = bridge();
    let mut rng = Rng(4);
    let spec = RopeSpec::new();
    let rope = b.rope(&spec, 64).expect("rope");
    // BSHD data seen as BHSD: strides permuted, bound where it lies.
    let bshd = [2, 9, 3, 64];
    let x = rng.values(bshd.iter().product());
    let t = tensor(x.clone(), bshd).swap_dims(1, 2);
    let got = read(
        b.apply(&rope, t, Positions::Start(4))
            .expect("apply")
            .swap_dims(1, 2),
    );
    let layout = Layout::bshd(wgpu_posenc::Dims {
        batch: 2,
        heads: 3,
        seq: 9,
        head_dim: 64,
    });
    let mut want: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    reference::rope(&spec, &layout, &mut want, HostPositions::Start(4));
    assert!(max_diff(&got, &want) < 1e-6);

    // A slice of heads: its offset into the buffer; the heads outside stay as they were.
    let shape = [1, 6, 8, 64];
    let x = rng.values(shape.iter().product());
    let whole = tensor(x.clone(), shape);
    let part = whole.clone().narrow(1, 2, 3);
    drop(whole);
    let got = b.apply(&rope, part, Positions::Start(0)).expect("apply");
    let slice: Vec<f32> = x[2 * 8 * 64..5 * 8 * 64].to_vec();
    let want = rope_reference(&spec, [1, 3, 8, 64], &slice, HostPositions::Start(0));
    assert!(max_diff(&read(got), &want) < 1e-6);

    // A broadcast view cannot be written in place. Without fusion that is an error at the
    // call; with it the view is known only when the stream runs the call, which rotates a
    // contiguous copy.
    let values = rng.values(64);
    let row = tensor(values.clone(), [1, 1, 1, 64]).expand([1, 4, 1, 64]);
    match b.apply(&rope, row, Positions::Start(0)) {
        Err(Error::Layout { why, .. }) if !fused() => assert!(why.contains("broadcast"), "{why}"),
        Ok(got) if fused() => {
            let x: Vec<f32> = (0..4).flat_map(|_| values.iter().copied()).collect();
            let want = rope_reference(&spec, [1, 4, 1, 64], &x, HostPositions::Start(0));
            assert!(
                max_diff(&read(got), &want) < 1e-6,
                "a broadcast view, copied"
            );
        }
        other => panic!("a broadcast view (fused: {}): {other:?}", fused()),
    }
}

#[test]
fn a_shared_tensor_keeps_its_values() {
    let b = bridge();
    let mut rng = Rng(5);
    let shape = [1, 2, 16, 32];
    let spec = RopeSpec::new();
    let rope = b.rope(&spec, 32).expect("rope");
    let x = rng.values(shape.iter().product());
    let t = tensor(x.clone(), shape);
    let kept = t.clone();
    let got = b.apply(&rope, t, Positions::Start(100)).expect("apply");
    let want = rope_reference(&spec, shape, &x, HostPositions::Start(100));
    assert!(max_diff(&read(got), &want) < 1e-6);
    assert_eq!(read(kept), x, "the clone must keep its values");
}

#[test]
fn burn_operations_before_and_after_in_one_stream() {
    let b = bridge();
    let mut rng = Rng(6);
    let shape = [1, 4, 64, 64];
    let spec = RopeSpec::new();
    let rope = b.rope(&spec, 64).expect("rope");
    let x = rng.values(shape.iter().product());
    // burn doubles, the bridge rotates, burn adds one: no sync in between.
    let t = tensor(x.clone(), shape).mul_scalar(2.0);
    let t = b.apply(&rope, t, Positions::Start(7)).expect("apply");
    let got = read(t.add_scalar(1.0));
    let doubled: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
    let want: Vec<f64> = rope_reference(&spec, shape, &doubled, HostPositions::Start(7))
        .into_iter()
        .map(|v| v + 1.0)
        .collect();
    assert!(max_diff(&got, &want) < 2e-6);
}

/// `x` stored as `E` (`dtype`), rotated by the bridge at position 3 and read back as its
/// bytes; the values as stored and as rotated, widened.
fn rotate_stored<E>(
    dtype: DType,
    from_f32: fn(f32) -> E,
    x: &[f32],
    shape: [usize; 4],
    rope: &wgpu_posenc::Rope,
) -> Result<(Vec<f32>, Vec<f32>), Error>
where
    E: burn::tensor::Element + Into<f32> + Copy,
{
    let b = bridge();
    let stored: Vec<E> = x.iter().map(|&v| from_f32(v)).collect();
    let t = Tensor::<4>::from_data(TensorData::new(stored.clone(), shape), (b.device(), dtype));
    let got = b.apply(rope, t, Positions::Start(3))?;
    let got = got.into_data().try_to_vec::<E>().expect("read back");
    let widen = |v: Vec<E>| v.into_iter().map(Into::into).collect();
    Ok((widen(stored), widen(got)))
}

#[test]
fn every_float_dtype() {
    // f16 and bf16 tensors uploaded and read back as their bytes: CubeCL's WGSL compiler
    // has no bf16, so burn cannot compute with bf16 on wgpu, but it holds such a tensor and
    // the bridge rotates it (unpacked from u32 words, as the core crate does everywhere).
    use burn::tensor::{bf16, f16};
    let b = bridge();
    let mut rng = Rng(7);
    let shape = [1, 2, 8, 64];
    let spec = RopeSpec::new();
    let rope = b.rope(&spec, 64).expect("rope");
    let x = rng.values(shape.iter().product());
    let check = |(stored, got): (Vec<f32>, Vec<f32>), ulp: f64, what: &str| {
        let want = rope_reference(&spec, shape, &stored, HostPositions::Start(3));
        let err = max_diff(&got, &want);
        // One rounding to the stored type of values below 2 in magnitude.
        assert!(err <= 2.0 * ulp, "{what}: {err:e}");
    };
    // f16 wherever the device has SHADER_F16 (not the GL backend).
    let has_f16 = b
        .posenc()
        .device()
        .features()
        .contains(burn::backend::wgpu::wgpu::Features::SHADER_F16);
    match rotate_stored(DType::F16, f16::from_f32, &x, shape, &rope) {
        Ok(r) => check(r, 2f64.powi(-10), "f16"),
        Err(Error::PosEnc(wgpu_posenc::Error::MissingFeature { .. })) if !has_f16 => {}
        Err(e) => panic!("f16: {e}"),
    }
    let r = rotate_stored(DType::BF16, bf16::from_f32, &x, shape, &rope).expect("bf16");
    check(r, 2f64.powi(-7), "bf16");
}

#[test]
fn fused_qkv_with_qk_norm_into_burn_caches() {
    let b = bridge();
    let mut rng = Rng(8);
    let (batch, seq, q_heads, kv_heads, d, cache_len) =
        (1usize, 6usize, 4usize, 2usize, 64usize, 16usize);
    let heads = q_heads + 2 * kv_heads;
    let spec = RopeSpec::new().base(1_000_000.0);
    let rope = b.rope(&spec, d as u64).expect("rope");
    let norm = QkNorm {
        q_weight: rng.values(d),
        k_weight: rng.values(d),
        eps: 1e-6,
        weight: NormWeight::Scale,
    };
    // The projection as burn's linear layers give it, BSHD, seen as BHSD.
    let x = rng.values(batch * seq * heads * d);
    let qkv = tensor(x.clone(), [batch, seq, heads, d]).swap_dims(1, 2);
    let cache_values = rng.values(batch * kv_heads * cache_len * d);
    let k_cache = tensor(cache_values.clone(), [batch, kv_heads, cache_len, d]);
    let v_cache = tensor(cache_values.clone(), [batch, kv_heads, cache_len, d]);
    let [q, k_cache, v_cache] = b
        .qkv(
            &rope,
            qkv,
            kv_heads as u64,
            Positions::Start(5),
            k_cache,
            v_cache,
            Some(&norm),
        )
        .expect("qkv");
    let layout = Layout::bshd(wgpu_posenc::Dims {
        batch: batch as u64,
        heads: heads as u64,
        seq: seq as u64,
        head_dim: d as u64,
    });
    let cache_layout = Layout::bhsd([batch, kv_heads, cache_len, d].map(|v| v as u64));
    let mut want_x: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    let widen = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
    let (mut want_k, mut want_v) = (widen(&cache_values), widen(&cache_values));
    reference::qkv_cache(
        &spec,
        &layout,
        &mut want_x,
        kv_heads as u64,
        HostPositions::Start(5),
        None,
        (&cache_layout, &mut want_k),
        (&cache_layout, &mut want_v),
        HostCacheIndex::Position,
        Some(&norm),
    );
    // Q: heads [0, q_heads) of the BSHD projection, read back as [batch, q_heads, seq, d].
    let got_q = read(q);
    let mut want_q = Vec::new();
    for h in 0..q_heads {
        for s in 0..seq {
            let at = (s * heads + h) * d;
            want_q.extend_from_slice(&want_x[at..at + d]);
        }
    }
    assert!(max_diff(&got_q, &want_q) < 1e-6, "Q");
    assert!(max_diff(&read(k_cache), &want_k) < 1e-6, "K cache");
    assert!(max_diff(&read(v_cache), &want_v) < 1e-7, "V cache");
}

#[test]
fn a_shared_cache_is_refused() {
    let b = bridge();
    let mut rng = Rng(9);
    let rope = b.rope(&RopeSpec::new(), 32).expect("rope");
    let qkv = tensor(rng.values(3 * 2 * 32), [1, 3, 2, 32]);
    let k = tensor(rng.values(4 * 32), [1, 1, 4, 32]);
    let v = tensor(rng.values(4 * 32), [1, 1, 4, 32]);
    let k_clone = k.clone();
    match b.qkv(&rope, qkv, 1, Positions::Start(0), k, v, None) {
        Err(Error::Shared { what }) => assert_eq!(what, "the K cache"),
        other => panic!("a shared cache: {other:?}"),
    }
    drop(k_clone);
}

#[test]
fn the_sinusoidal_table_as_a_burn_tensor() {
    let b = bridge();
    let spec = SinusoidalSpec::new(256);
    let t = b.sinusoidal_table(&spec, 40, 1000).expect("table");
    assert_eq!(t.dims(), [40, 256]);
    let want = reference::sinusoidal_table(&spec, 40, 1000);
    assert!(max_diff(&read(t), &want) < 2e-7);
}

#[test]
fn built_from_burns_own_runtime() {
    // The other way round: burn makes the device, the kernels join it.
    let b = BurnPosEnc::from_burn().expect("burn's runtime");
    let mut rng = Rng(10);
    let shape = [1, 2, 12, 64];
    let spec = RopeSpec::new().pair_layout(PairLayout::Interleaved);
    let rope = b.rope(&spec, 64).expect("rope");
    let x = rng.values(shape.iter().product());
    let t = Tensor::<4>::from_data(TensorData::new(x.clone(), shape), b.device());
    let got = b
        .apply(&rope, t.mul_scalar(1.0), Positions::Start(40))
        .expect("apply");
    let got = got.into_data().try_to_vec::<f32>().expect("f32");
    let want = rope_reference(&spec, shape, &x, HostPositions::Start(40));
    assert!(max_diff(&got, &want) < 1e-6);
    // A tensor of the other runtime is refused.
    let other = tensor(x, shape);
    match b.apply(&rope, other, Positions::Start(0)) {
        Err(Error::OtherDevice { .. }) => {}
        other => panic!("a tensor of another device: {other:?}"),
    }
}

#[test]
fn q_and_k_in_one_call_with_grouped_heads() {
    let b = bridge();
    let mut rng = Rng(11);
    let spec = RopeSpec::new().pair_layout(PairLayout::Interleaved);
    let rope = b.rope(&spec, 64).expect("rope");
    let (q_shape, k_shape) = ([2, 8, 5, 64], [2, 2, 5, 64]);
    let (xq, xk) = (
        rng.values(q_shape.iter().product()),
        rng.values(k_shape.iter().product()),
    );
    // Per-row starts from a burn int tensor.
    let starts = Tensor::<1, Int>::from_data(TensorData::new(vec![3i32, 70_000], [2]), b.device());
    let host = [3u32, 70_000];
    let (q, k) = b
        .apply_qk(
            &rope,
            tensor(xq.clone(), q_shape),
            tensor(xk.clone(), k_shape),
            Positions::BatchStarts(starts),
        )
        .expect("apply_qk");
    let want_q = rope_reference(&spec, q_shape, &xq, HostPositions::BatchStarts(&host));
    let want_k = rope_reference(&spec, k_shape, &xk, HostPositions::BatchStarts(&host));
    assert!(max_diff(&read(q), &want_q) < 1e-6, "Q");
    assert!(max_diff(&read(k), &want_k) < 1e-6, "K");
}

#[test]
fn a_shared_projection_gives_q_in_a_new_tensor() {
    let b = bridge();
    let mut rng = Rng(12);
    let (seq, q_heads, kv_heads, d, cache_len) = (3usize, 2usize, 1usize, 32usize, 8usize);
    let heads = q_heads + 2 * kv_heads;
    let spec = RopeSpec::new();
    let rope = b.rope(&spec, d as u64).expect("rope");
    let x = rng.values(heads * seq * d);
    let qkv = tensor(x.clone(), [1, heads, seq, d]);
    let kept = qkv.clone();
    let cache = |rng: &mut Rng| {
        tensor(
            rng.values(kv_heads * cache_len * d),
            [1, kv_heads, cache_len, d],
        )
    };
    let (k_cache, v_cache) = (cache(&mut rng), cache(&mut rng));
    let [q, _, _] = b
        .qkv(
            &rope,
            qkv,
            kv_heads as u64,
            Positions::Start(2),
            k_cache,
            v_cache,
            None,
        )
        .expect("qkv");
    assert_eq!(q.dims(), [1, q_heads, seq, d]);
    let want = rope_reference(
        &spec,
        [1, q_heads, seq, d],
        &x[..q_heads * seq * d],
        HostPositions::Start(2),
    );
    assert!(max_diff(&read(q), &want) < 1e-6);
    assert_eq!(
        read(kept),
        x,
        "the clone of the projection keeps its values"
    );
}

#[test]
fn bad_calls_are_typed_errors() {
    let b = bridge();
    let mut rng = Rng(13);
    let rope = b.rope(&RopeSpec::new(), 32).expect("rope");
    // An empty tensor: nothing to rotate.
    let empty = Tensor::<4>::empty([1, 2, 0, 32], b.device());
    let out = b.apply(&rope, empty, Positions::Start(0)).expect("empty");
    assert_eq!(out.dims(), [1, 2, 0, 32]);
    // A head of another size than the prepared one.
    let wrong = tensor(rng.values(2 * 4 * 16), [1, 2, 4, 16]);
    assert!(matches!(
        b.apply(&rope, wrong, Positions::Start(0)),
        Err(Error::PosEnc(_))
    ));
    // Positions of a dtype the kernels do not read.
    let ids = Tensor::<1, Int>::from_data(
        TensorData::new(vec![0i64, 1, 2, 3], [4]),
        (b.device(), DType::I64),
    );
    let x = tensor(rng.values(4 * 32), [1, 1, 4, 32]);
    assert!(matches!(
        b.apply(&rope, x, Positions::Ids(ids)),
        Err(Error::Dtype { .. })
    ));
    // Too few position ids for the tokens.
    let ids = Tensor::<1, Int>::from_data(TensorData::new(vec![0i32, 1], [2]), b.device());
    let x = tensor(rng.values(4 * 32), [1, 1, 4, 32]);
    assert!(b.apply(&rope, x, Positions::Ids(ids)).is_err());
    // More KV heads than the projection holds, up to u64::MAX.
    for kv in [3, u64::MAX] {
        let qkv = tensor(rng.values(4 * 2 * 32), [1, 4, 2, 32]);
        let cache = |rng: &mut Rng| tensor(rng.values(4 * 32), [1, 1, 4, 32]);
        let (k, v) = (cache(&mut rng), cache(&mut rng));
        assert!(
            b.qkv(&rope, qkv, kv, Positions::Start(0), k, v, None)
                .is_err(),
            "kv_heads {kv}"
        );
    }
    // A table past any buffer, and an empty one.
    let spec = SinusoidalSpec::new(4096);
    assert!(b.sinusoidal_table(&spec, usize::MAX / 8, 0).is_err());
    let t = b.sinusoidal_table(&spec, 0, 0).expect("an empty table");
    assert_eq!(t.dims(), [0, 4096]);
}
