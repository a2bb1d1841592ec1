//! Bad input: each case returns its typed error, before anything is recorded.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::ctx;
use wgpu::util::DeviceExt;
use wgpu_posenc::Dims;
use wgpu_posenc::{
    ArrayView, Dtype, Error, HostPositions, Layout, OutputOrder, PairLayout, Positions, RopeCall,
    RopeSpec, SinusoidalSpec, TensorView,
};

fn buffer(bytes: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
    ctx().device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("errors"),
        size: bytes,
        usage,
        mapped_at_creation: false,
    })
}

fn storage(bytes: u64) -> wgpu::Buffer {
    buffer(bytes, wgpu::BufferUsages::STORAGE)
}

fn rope(spec: &RopeSpec, view: TensorView<'_>, positions: Positions<ArrayView<'_>>) -> Error {
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    ctx()
        .encode_rope(&mut encoder, spec, &view, positions)
        .expect_err("must be refused")
}

#[test]
fn head_and_rotary_dims() {
    let b = storage(4096);
    let odd = TensorView::new(&b, Layout::bhsd([1, 1, 4, 7]));
    assert!(matches!(
        rope(&RopeSpec::new(), odd, Positions::Start(0)),
        Error::InvalidHeadDim { head_dim: 7 }
    ));
    let zero = TensorView::new(&b, Layout::bhsd([1, 1, 4, 0]));
    assert!(matches!(
        rope(&RopeSpec::new(), zero, Positions::Start(0)),
        Error::InvalidHeadDim { head_dim: 0 }
    ));
    let view = TensorView::new(&b, Layout::bhsd([1, 1, 4, 8]));
    for r in [0, 3, 10] {
        let e = rope(&RopeSpec::new().rotary_dim(r), view, Positions::Start(0));
        assert!(
            matches!(e, Error::InvalidRotaryDim { rotary_dim, head_dim: 8 } if rotary_dim == r),
            "{e}"
        );
    }
    for base in [f64::NAN, 1.0, -3.0, f64::INFINITY] {
        let e = rope(&RopeSpec::new().base(base), view, Positions::Start(0));
        assert!(
            matches!(e, Error::InvalidParameter { what: "base", .. }),
            "{e}"
        );
    }
}

#[test]
fn an_empty_view_still_validates_the_spec() {
    // M-RoPE sections that do not cover the pairs, on a view with no rows: refused as
    // PosEnc::rope and angle_words refuse it, through every form of the call.
    let b = storage(4096);
    let empty = TensorView::new(&b, Layout::bhsd([3, 0, 13, 2]));
    let spec = RopeSpec::new().mrope([1, 1, 1], true);
    let section = |e: &Error| matches!(e, Error::InvalidMRopeSection { pairs: 1, .. });
    assert!(
        section(&rope(&spec, empty, Positions::Start(0))),
        "encode_rope"
    );
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let call = wgpu_posenc::RopeCall::new(empty, Positions::Start(0)).with_k(empty);
    let e = ctx()
        .encode_rope_call(&mut encoder, &spec, &call)
        .expect_err("encode_rope_call");
    assert!(section(&e), "{e}");
    assert!(section(&ctx().rope(&spec, 2).expect_err("rope")));
    assert!(section(&spec.angle_words(2, 1).expect_err("angle_words")));
    // Head widths no table may be sized by, on an empty view too.
    let wide = TensorView::new(&b, Layout::bhsd([1, 0, 1, 1 << 40]));
    assert!(matches!(
        rope(&RopeSpec::new(), wide, Positions::Start(0)),
        Error::InvalidHeadDim { .. }
    ));
}

#[test]
fn an_output_order_only_where_the_output_is_another_buffer() {
    let halves = RopeSpec::new()
        .pair_layout(PairLayout::Interleaved)
        .output_order(OutputOrder::PairHalves);
    let b = storage(4096);
    let view = |offset| TensorView::new(&b, Layout::bhsd([1, 2, 3, 16]).with_offset(offset));
    // In place (one tensor, an empty one, or Q and K): refused, whatever the view.
    for v in [view(0), TensorView::new(&b, Layout::bhsd([1, 0, 3, 16]))] {
        assert!(matches!(
            rope(&halves, v, Positions::Start(0)),
            Error::PairHalvesInPlace { .. }
        ));
    }
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let qk = RopeCall::new(view(0), Positions::Start(0)).with_k(view(256));
    assert!(matches!(
        ctx().encode_rope_call(&mut encoder, &halves, &qk),
        Err(Error::PairHalvesInPlace { .. })
    ));
    // Half-split pairs are already in that order: a spec error, in place or not.
    let half_split = halves.clone().pair_layout(PairLayout::HalfSplit);
    let out = RopeCall::new(view(0), Positions::Start(0)).with_output(view(256));
    assert!(matches!(
        ctx().encode_rope_call(&mut encoder, &half_split, &out),
        Err(Error::PairHalvesNeedInterleaved)
    ));
    // Out of place with interleaved pairs: accepted.
    ctx()
        .encode_rope_call(&mut encoder, &halves, &out)
        .expect("out of place");
}

#[test]
fn one_buffer_views_that_must_share_a_binding_say_which_limit_binds() {
    // Source [1, 1, 2, 256] f32 at 0 and its output at element 512 of the same buffer,
    // under a 1536-byte binding: a 1024-byte row fits one binding, not the half each view of
    // one buffer is planned within. The error says so, and the size that would do.
    let b = storage(8192);
    let source = TensorView::new(&b, Layout::bhsd([1, 1, 2, 256]));
    let output = TensorView::new(&b, Layout::bhsd([1, 1, 2, 256]).with_offset(512));
    let call = wgpu_posenc::RopeCall::new(source, Positions::Start(0)).with_output(output);
    let capped = ctx().clone().with_max_binding_size(1536);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let e = capped
        .encode_rope_call(&mut encoder, &RopeSpec::new(), &call)
        .expect_err("half a binding is too small");
    let Error::SharedRowTooLarge {
        row_bytes,
        limit,
        need,
    } = e
    else {
        panic!("{e}");
    };
    assert_eq!((row_bytes, limit), (1024, 1536));
    assert!(e.to_string().contains("half"), "{e}");
    // At the size it names, the call goes through.
    let enough = ctx().clone().with_max_binding_size(need);
    enough
        .encode_rope_call(&mut encoder, &RopeSpec::new(), &call)
        .unwrap_or_else(|e| panic!("with {need} bytes: {e}"));
    // A row that does not fit even a whole binding is the plain error.
    let e = ctx()
        .clone()
        .with_max_binding_size(768)
        .encode_rope_call(&mut encoder, &RopeSpec::new(), &call)
        .expect_err("a row above the binding");
    assert!(matches!(e, Error::RowTooLarge { .. }), "{e}");
}

#[test]
fn buffer_too_small_and_usage() {
    // 2 x 3 x 5 x 8 f32 = 960 bytes.
    let layout = Layout::bhsd([2, 3, 5, 8]);
    let small = storage(956);
    let e = rope(
        &RopeSpec::new(),
        TensorView::new(&small, layout),
        Positions::Start(0),
    );
    assert!(
        matches!(
            e,
            Error::BufferTooSmall {
                needed: 960,
                size: 956,
                ..
            }
        ),
        "{e}"
    );
    // An offset that pushes the end past the buffer.
    let exact = storage(960);
    let e = rope(
        &RopeSpec::new(),
        TensorView::new(&exact, layout.with_offset(4)),
        Positions::Start(0),
    );
    assert!(
        matches!(e, Error::BufferTooSmall { needed: 976, .. }),
        "{e}"
    );
    // Strides that reach past the end.
    let e = rope(
        &RopeSpec::new(),
        TensorView::new(&exact, Layout::strided([2, 3, 5, 8], [200, 40, 8])),
        Positions::Start(0),
    );
    assert!(matches!(e, Error::BufferTooSmall { .. }), "{e}");
    let uniform = buffer(
        1024,
        wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
    );
    let e = rope(
        &RopeSpec::new(),
        TensorView::new(&uniform, layout),
        Positions::Start(0),
    );
    assert!(
        matches!(
            e,
            Error::MissingUsage {
                missing: wgpu::BufferUsages::STORAGE,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn overlapping_rows_and_overflow() {
    let b = storage(1 << 16);
    // Tokens 4 elements apart with rows of 8: they overlap.
    let e = rope(
        &RopeSpec::new(),
        TensorView::new(&b, Layout::strided([1, 1, 10, 8], [0, 0, 4])),
        Positions::Start(0),
    );
    assert!(matches!(e, Error::OverlappingRows { .. }), "{e}");
    // Heads and tokens interleaving onto the same rows.
    let e = rope(
        &RopeSpec::new(),
        TensorView::new(&b, Layout::strided([1, 4, 4, 8], [0, 8, 16])),
        Positions::Start(0),
    );
    assert!(matches!(e, Error::OverlappingRows { .. }), "{e}");
    // An element count past u64.
    let huge = Layout::bhsd([1 << 20, 1 << 20, 1 << 20, 1 << 6]);
    let e = rope(
        &RopeSpec::new(),
        TensorView::new(&b, huge),
        Positions::Start(0),
    );
    assert!(
        matches!(e, Error::ShapeOverflow { limit: "u64", .. }),
        "{e}"
    );
    // Fits u64 but not any buffer.
    let big = Layout::bhsd([1 << 10, 1 << 10, 1 << 10, 1 << 6]);
    let e = rope(
        &RopeSpec::new(),
        TensorView::new(&b, big),
        Positions::Start(0),
    );
    assert!(matches!(e, Error::BufferTooSmall { .. }), "{e}");
}

#[test]
fn positions() {
    let b = storage(4 * 2 * 10 * 8);
    let view = TensorView::new(&b, Layout::bhsd([2, 1, 10, 8]));
    let e = rope(&RopeSpec::new(), view, Positions::Start(u32::MAX - 8));
    assert!(matches!(e, Error::PositionOverflow { seq: 10, .. }), "{e}");
    // The last valid start is fine.
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    ctx()
        .encode_rope(
            &mut encoder,
            &RopeSpec::new(),
            &view,
            Positions::Start(u32::MAX - 9),
        )
        .expect("fits");

    let ids = ctx()
        .device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: bytemuck::cast_slice(&[0u32; 19]),
            usage: wgpu::BufferUsages::STORAGE,
        });
    let e = rope(&RopeSpec::new(), view, Positions::Ids(ArrayView::new(&ids)));
    assert!(
        matches!(
            e,
            Error::PositionIdsTooShort {
                needed: 20,
                available: 19,
                ..
            }
        ),
        "{e}"
    );
    let e = rope(
        &RopeSpec::new(),
        view,
        Positions::Ids(ArrayView::at(&ids, 2)),
    );
    assert!(
        matches!(e, Error::MisalignedOffset { offset: 2, .. }),
        "{e}"
    );
    let not_storage = buffer(80, wgpu::BufferUsages::UNIFORM);
    let e = rope(
        &RopeSpec::new(),
        view,
        Positions::Ids(ArrayView::new(&not_storage)),
    );
    assert!(matches!(e, Error::MissingUsage { .. }), "{e}");

    let mut data = vec![0.5f32; 160];
    let e = ctx()
        .rope_host(
            &RopeSpec::new(),
            Layout::bhsd([2, 1, 10, 8]),
            &mut data,
            HostPositions::Ids(&[1; 19]),
        )
        .expect_err("short ids");
    assert!(
        matches!(
            e,
            Error::PositionIdsTooShort {
                needed: 20,
                available: 19,
                ..
            }
        ),
        "{e}"
    );
    let mut wide = vec![0.5f32; 180];
    let e = ctx()
        .rope_host(
            &RopeSpec::new(),
            Layout::bhsd([2, 1, 10, 9]),
            &mut wide,
            HostPositions::Start(0),
        )
        .expect_err("odd head");
    assert!(matches!(e, Error::InvalidHeadDim { head_dim: 9 }), "{e}");
    let e = ctx()
        .rope_host(
            &RopeSpec::new(),
            Layout::bhsd([2, 1, 11, 8]),
            &mut data,
            HostPositions::Start(0),
        )
        .expect_err("short data");
    assert!(
        matches!(
            e,
            Error::HostLength {
                needed: 176,
                got: 160
            }
        ),
        "{e}"
    );
}

#[test]
fn sinusoidal_inputs() {
    // An odd width is a row with a zero at its end (diffusers' padding); one element has
    // no pair at all.
    let e = ctx()
        .sinusoidal_table_host(&SinusoidalSpec::new(1), 4, 0)
        .expect_err("d_model 1");
    assert!(matches!(e, Error::InvalidDModel { d_model: 1 }), "{e}");
    let e = ctx()
        .sinusoidal_table_host(&SinusoidalSpec::new(0), 4, 0)
        .expect_err("zero d_model");
    assert!(matches!(e, Error::InvalidDModel { d_model: 0 }), "{e}");
    let e = ctx()
        .sinusoidal_table_host(&SinusoidalSpec::new(8), 4, u32::MAX - 2)
        .expect_err("overflow");
    assert!(matches!(e, Error::PositionOverflow { .. }), "{e}");
    let b = storage(1024);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let view = TensorView::new(&b, Layout::bsd(1, 4, 16));
    let e = ctx()
        .encode_sinusoidal_add(
            &mut encoder,
            &SinusoidalSpec::new(8),
            &view,
            Positions::Start(0),
            1.0,
        )
        .expect_err("mismatch");
    assert!(
        matches!(
            e,
            Error::DimMismatch {
                spec: 8,
                tensor: 16
            }
        ),
        "{e}"
    );
    let e = ctx()
        .encode_sinusoidal_add(
            &mut encoder,
            &SinusoidalSpec::new(16),
            &view,
            Positions::Start(0),
            f32::NAN,
        )
        .expect_err("nan");
    assert!(
        matches!(e, Error::InvalidParameter { what: "scale", .. }),
        "{e}"
    );
    let e = ctx()
        .encode_sinusoidal_table(
            &mut encoder,
            &SinusoidalSpec::new(16),
            &TensorView::new(&b, Layout::rows(17, 16)),
            0,
        )
        .expect_err("small");
    assert!(
        matches!(
            e,
            Error::BufferTooSmall {
                needed: 1088,
                size: 1024,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn f16_without_the_feature_is_a_clear_error() {
    // Every adapter answers: with SHADER_F16 the call is accepted (tests/f16.rs checks the
    // numbers); without it (the GL backend) it is refused with MissingFeature.
    let b = storage(1024);
    let view = TensorView::new(&b, Layout::bhsd([1, 1, 4, 8])).with_dtype(Dtype::F16);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let result = ctx().encode_rope(&mut encoder, &RopeSpec::new(), &view, Positions::Start(0));
    if ctx()
        .device()
        .features()
        .contains(wgpu::Features::SHADER_F16)
    {
        result.expect("f16 supported");
    } else {
        let e = result.expect_err("no f16");
        assert!(
            matches!(
                e,
                Error::MissingFeature {
                    feature: wgpu::Features::SHADER_F16,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("use f32"), "{e}");
    }
}

#[test]
fn host_positions_the_gpu_cannot_check() {
    let layout = Layout::bhsd([2, 1, 10, 8]);
    let mut data = vec![0.5f32; 160];
    let e = ctx()
        .rope_host(
            &RopeSpec::new(),
            layout,
            &mut data,
            HostPositions::BatchStarts(&[0, u32::MAX - 5]),
        )
        .expect_err("start overflow");
    assert!(matches!(e, Error::PositionOverflow { seq: 10, .. }), "{e}");
    let varlen = Layout::bshd(Dims {
        batch: 1,
        heads: 2,
        seq: 10,
        head_dim: 8,
    });
    for cu in [&[0u32, 6, 4, 10][..], &[1, 5, 10], &[0, 5, 9]] {
        let e = ctx()
            .rope_host(
                &RopeSpec::new(),
                varlen,
                &mut data,
                HostPositions::varlen(cu, None),
            )
            .expect_err("bad cu_seqlens");
        assert!(matches!(e, Error::PositionsMismatch(_)), "{cu:?}: {e}");
    }
    let e = ctx()
        .rope_host(
            &RopeSpec::new(),
            varlen,
            &mut data,
            HostPositions::varlen(&[0, 4, 10], Some(&[0, u32::MAX - 2])),
        )
        .expect_err("offset overflow");
    assert!(matches!(e, Error::PositionOverflow { seq: 6, .. }), "{e}");
    // A host Varlen whose count of sequences the slices cannot hold, and one whose count
    // leaves a sequence out (its cu_seqlens then end before the view's tokens).
    let three = HostPositions::Varlen {
        cu_seqlens: &[0, 4, 10],
        num_seqs: 3,
        offsets: None,
    };
    let e = ctx()
        .rope_host(&RopeSpec::new(), varlen, &mut data, three)
        .expect_err("num_seqs past the slice");
    assert!(
        matches!(
            e,
            Error::PositionIdsTooShort {
                what: "cu_seqlens",
                needed: 4,
                available: 3
            }
        ),
        "{e}"
    );
    let one = HostPositions::Varlen {
        cu_seqlens: &[0, 4, 10],
        num_seqs: 1,
        offsets: None,
    };
    let e = ctx()
        .rope_host(&RopeSpec::new(), varlen, &mut data, one)
        .expect_err("a sequence left out");
    assert!(matches!(e, Error::PositionsMismatch(_)), "{e}");
}

#[test]
fn q_and_k_or_source_and_output_sharing_elements() {
    let b = buffer(
        1 << 16,
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    );
    let q = Layout::bshd(Dims {
        batch: 1,
        heads: 4,
        seq: 8,
        head_dim: 16,
    });
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let spec = RopeSpec::new();
    // K the same view as Q, and K shifted by one head inside Q's token rows.
    for k in [q, Layout::strided([1, 2, 8, 16], q.strides).with_offset(16)] {
        let e = ctx()
            .encode_rope_qk(
                &mut encoder,
                &spec,
                &TensorView::new(&b, q),
                &TensorView::new(&b, k),
                Positions::Start(0),
            )
            .expect_err("Q and K share elements");
        assert!(matches!(e, Error::TensorsOverlap { .. }), "{e}");
    }
    // Q and K interleaved by token without sharing an element (packed QKV) are fine.
    let row = 8 * 16;
    let packed_q = Layout::strided([1, 4, 8, 16], [0, 16, row]);
    let packed_k = Layout::strided([1, 2, 8, 16], [0, 16, row]).with_offset(4 * 16);
    ctx()
        .encode_rope_qk(
            &mut encoder,
            &spec,
            &TensorView::new(&b, packed_q),
            &TensorView::new(&b, packed_k),
            Positions::Start(0),
        )
        .expect("packed Q and K are disjoint");
    // Out of place onto the source shifted by one row.
    let call = wgpu_posenc::RopeCall::new(TensorView::new(&b, q), Positions::Start(0))
        .with_output(TensorView::new(&b, q.with_offset(16)));
    let e = ctx()
        .encode_rope_call(&mut encoder, &spec, &call)
        .expect_err("output over its source");
    assert!(matches!(e, Error::TensorsOverlap { .. }), "{e}");
}

#[test]
fn positions_in_a_buffer_the_call_writes_are_an_error() {
    // WebGPU forbids one buffer bound writable (the tensor) and read-only (the ids) in one
    // dispatch: a typed error, never an invalid bind group.
    let b = buffer(
        1 << 16,
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    );
    let view = TensorView::new(&b, Layout::bhsd([1, 2, 8, 16]));
    let e = rope(
        &RopeSpec::new(),
        view,
        Positions::Ids(ArrayView::at(&b, 1 << 15)),
    );
    assert!(
        matches!(
            e,
            Error::BindingConflict {
                both_writable: false,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn host_positions_too_short_are_refused_before_upload() {
    // One token, an empty id slice: an error, not a zero uploaded in its place.
    let mut data = vec![0.5f32; 16];
    let layout = Layout::bhsd([1, 1, 1, 16]);
    for positions in [
        HostPositions::Ids(&[]),
        HostPositions::BatchStarts(&[]),
        HostPositions::Axes(&[1, 2]),
    ] {
        let spec = if matches!(positions, HostPositions::Axes(_)) {
            RopeSpec::new().mrope([2, 3, 3], false)
        } else {
            RopeSpec::new()
        };
        let e = ctx()
            .rope_host(&spec, layout, &mut data, positions)
            .expect_err("too short");
        assert!(matches!(e, Error::PositionIdsTooShort { .. }), "{e}");
    }
    assert_eq!(data, vec![0.5f32; 16], "nothing ran");
}

#[test]
fn length_dependent_scaling_with_gpu_positions_needs_the_length() {
    // HF picks LongRoPE's factors from max(position_ids) + 1, which the host cannot see in
    // a GPU buffer: Phi-3 at ids 32640..32767 needs the long factors, the view's length
    // (128) would select the short ones.
    let b = storage(1 << 16);
    let ids = common::u32_buffer(&(32_640..32_768).collect::<Vec<u32>>());
    let spec = RopeSpec::new().scaling(wgpu_posenc::Scaling::LongRope(wgpu_posenc::LongRope {
        short_factor: vec![1.0; 8],
        long_factor: vec![4.0; 8],
        original_max_position_embeddings: 4096,
        max_position_embeddings: 131_072,
        attention_factor: None,
    }));
    let view = TensorView::new(&b, Layout::bhsd([1, 1, 128, 16]));
    let e = rope(&spec, view, Positions::Ids(ArrayView::new(&ids)));
    assert!(matches!(e, Error::ScalingSeqLenNeeded { .. }), "{e}");
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    ctx()
        .encode_rope(
            &mut encoder,
            &spec.clone().scaling_seq_len(32_768),
            &view,
            Positions::Ids(ArrayView::new(&ids)),
        )
        .expect("with the length given");
}

#[test]
fn frequencies_too_large_to_reduce_exactly() {
    // Reciprocal timescales from 1e-15: a frequency of 1e15 rad per position.
    let b = storage(1 << 12);
    let view = TensorView::new(&b, Layout::rows(4, 8));
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let e = ctx()
        .encode_sinusoidal_table(
            &mut encoder,
            &SinusoidalSpec::new(8).timescales(1e-15, 1.0),
            &view,
            0,
        )
        .expect_err("1e15 rad per position");
    assert!(matches!(e, Error::InvalidParameter { .. }), "{e}");
}
