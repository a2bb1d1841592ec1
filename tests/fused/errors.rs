//! Fused calls that cannot run, each refused with its typed error.

use super::common::{ctx, u32_buffer};
use super::{Case, Index, norm, run};
use wgpu_posenc::{
    ArrayView, CacheIndex, Dims, Dtype, Error, KvCache, Layout, NormWeight, OutputOrder,
    PairLayout, Positions, QkvCall, RopeSpec, TensorView,
};

#[test]
fn bad_fused_calls_are_typed_errors() {
    // HF's DeepSeek order for K with Q in place would pair a permuted K with an unpermuted Q.
    let in_place = Case {
        spec: RopeSpec::new()
            .pair_layout(PairLayout::Interleaved)
            .output_order(OutputOrder::PairHalves),
        ..Case::new(
            "PairHalves, Q in place",
            [1, 4, 2, 1, 16],
            Positions::Start(0),
        )
    };
    assert!(
        matches!(run(&in_place, 1), Err(Error::PairHalvesInPlace { .. })),
        "{:?}",
        run(&in_place, 1)
    );
    let start = Case {
        cache_len: 8,
        ..Case::new(
            "start past the cache",
            [1, 4, 2, 1, 16],
            Positions::Start(6),
        )
    };
    assert!(
        matches!(
            run(&start, 1),
            Err(Error::KvCacheTooShort {
                position: 9,
                len: 8
            })
        ),
        "{:?}",
        run(&start, 1)
    );
    let short_weights = Case {
        norm: Some(norm(8, NormWeight::Scale)),
        q_out: true,
        ..Case::new(
            "QK-norm weights too short",
            [1, 4, 2, 1, 16],
            Positions::Start(0),
        )
    };
    assert!(matches!(
        run(&short_weights, 4),
        Err(Error::ShapeMismatch { .. })
    ));
    let slots_and_offsets = Case {
        index: Index::Slots(vec![0, 1, 2, 3]),
        ..Case::new(
            "slots with varlen offsets",
            [1, 4, 2, 1, 16],
            Positions::Varlen {
                cu_seqlens: vec![0, 2, 4],
                num_seqs: 2,
                offsets: Some(vec![1, 1]),
            },
        )
    };
    assert!(matches!(
        run(&slots_and_offsets, 2),
        Err(Error::Unsupported(_))
    ));
    // Shapes: a head_dim other than the spec's, kv_heads that do not fit, a cache of the
    // wrong shape, K and V caches of different dtypes, and a cache over the input.
    let b = |bytes: u64| {
        ctx().device().create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        })
    };
    let (qkv_buf, k_buf, v_buf) = (b(4096), b(4096), b(4096));
    let qkv = TensorView::new(
        &qkv_buf,
        Layout::bshd(Dims {
            batch: 1,
            heads: 6,
            seq: 2,
            head_dim: 16,
        }),
    );
    let cache = |buf| TensorView::new(buf, Layout::bhsd([1, 2, 8, 16]));
    let kv = KvCache {
        k: cache(&k_buf),
        v: cache(&v_buf),
        index: CacheIndex::Position,
        overflow_flag: None,
    };
    let spec = RopeSpec::new();
    let encode = |call: &QkvCall<'_>| {
        let mut encoder = ctx().device().create_command_encoder(&Default::default());
        ctx().encode_qkv(&mut encoder, &spec, call)
    };
    let good = QkvCall::new(qkv, 2, Positions::Start(0), kv);
    encode(&good).expect("the good call");
    // f32 positions are encode_rope's and the sinusoidal encoding's, not the fused call's.
    let float_ids = u32_buffer(&[0.5f32.to_bits(); 2]);
    let float = QkvCall::new(qkv, 2, Positions::Float(ArrayView::new(&float_ids)), kv);
    assert!(matches!(encode(&float), Err(Error::PositionsMismatch(_))));
    // A fourth position axis (RopeSpec::axes_rope4) is encode_rope's only.
    let four_ids = u32_buffer(&[1; 4 * 2]);
    let four = QkvCall::new(qkv, 2, Positions::Axes(ArrayView::new(&four_ids)), kv);
    let spec4 = RopeSpec::new().axes_rope4([2, 2, 2, 2]);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let e = ctx().encode_qkv(&mut encoder, &spec4, &four);
    assert!(matches!(e, Err(Error::Unsupported(_))), "{e:?}");
    let wrong_heads = QkvCall {
        kv_heads: 3,
        ..good
    };
    assert!(matches!(encode(&wrong_heads), Err(Error::Unsupported(_))));
    let short_cache = KvCache {
        k: TensorView::new(&k_buf, Layout::bhsd([1, 1, 8, 16])),
        ..kv
    };
    assert!(matches!(
        encode(&QkvCall {
            cache: short_cache,
            ..good
        }),
        Err(Error::ShapeMismatch { .. })
    ));
    let mixed = KvCache {
        v: cache(&v_buf).with_dtype(Dtype::BF16),
        ..kv
    };
    assert!(matches!(
        encode(&QkvCall {
            cache: mixed,
            ..good
        }),
        Err(Error::Unsupported(_))
    ));
    let over_input = KvCache {
        k: cache(&qkv_buf),
        ..kv
    };
    assert!(matches!(
        encode(&QkvCall {
            cache: over_input,
            ..good
        }),
        Err(Error::TensorsOverlap { .. })
    ));
}
