//! Any input, any device: typed errors instead of panics, aborts or held memory.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::ctx;
use wgpu_posenc::Dims;
use wgpu_posenc::{
    ArrayView, CacheUsage, Dtype, Error, HostPositions, Layout, PairLayout, PosEnc, Positions,
    RopeSpec, Scaling, SinusoidalSpec, TensorView, reference,
};

/// The adapter the tests run on, for devices with limits of our choosing.
fn adapter() -> wgpu::Adapter {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
        .expect("the GPU tests need an adapter (see tests/common)")
}

fn device(limits: wgpu::Limits, features: wgpu::Features) -> (wgpu::Device, wgpu::Queue) {
    pollster::block_on(adapter().request_device(&wgpu::DeviceDescriptor {
        label: Some("robustness"),
        required_features: features,
        required_limits: limits,
        ..Default::default()
    }))
    .expect("device")
}

#[test]
fn a_device_short_of_a_limit_is_an_error_not_a_panic() {
    let (device, queue) = device(wgpu::Limits::downlevel_defaults(), wgpu::Features::empty());
    let e = PosEnc::new(&device, &queue).expect_err("4 storage buffers per stage");
    assert!(
        matches!(
            e,
            Error::DeviceLimit {
                limit: "max_storage_buffers_per_shader_stage",
                needed: 8,
                got: 4
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("downlevel_defaults"), "{e}");
}

#[test]
fn host_data_larger_than_a_buffer_is_an_error() {
    let adapter_limits = adapter().limits();
    let limits = wgpu::Limits {
        max_buffer_size: 1 << 20,
        max_storage_buffer_binding_size: 1 << 20,
        ..adapter_limits
    };
    let (device, queue) = device(limits, wgpu::Features::empty());
    let ctx = PosEnc::new(&device, &queue).expect("context");
    let layout = Layout::bhsd([1, 4, 1024, 128]); // 2 MiB of f32
    let mut data = vec![0.25f32; 4 * 1024 * 128];
    let e = ctx
        .rope_host(&RopeSpec::new(), layout, &mut data, HostPositions::Start(0))
        .expect_err("2 MiB on a 1 MiB device");
    assert!(matches!(e, Error::BufferLimit { .. }), "{e}");
    let e = ctx
        .sinusoidal_add_host(
            &SinusoidalSpec::new(128),
            Layout::bsd(1, 4096, 128),
            &mut data,
            HostPositions::Start(0),
            1.0,
        )
        .expect_err("2 MiB");
    assert!(matches!(e, Error::BufferLimit { .. }), "{e}");
    let e = ctx
        .sinusoidal_table_host(&SinusoidalSpec::new(128), 4096, 0)
        .expect_err("2 MiB table");
    assert!(matches!(e, Error::BufferLimit { .. }), "{e}");
    // Within the limit it runs.
    let mut small = vec![0.25f32; 1024 * 128];
    ctx.rope_host(
        &RopeSpec::new(),
        Layout::bhsd([1, 1, 1024, 128]),
        &mut small,
        HostPositions::Start(0),
    )
    .expect("1/2 MiB");
}

#[test]
fn sizes_from_user_input_are_checked_before_anything_is_allocated() {
    // 8 TiB of table: an error, not an abort.
    let e = ctx()
        .sinusoidal_table_host(&SinusoidalSpec::new(2), 1 << 40, 0)
        .expect_err("8 TiB");
    assert!(matches!(e, Error::BufferLimit { .. }), "{e}");
    // An empty view with a head of 2^40 elements: the spec is validated (no head is that
    // wide), nothing sized by the head is allocated; at the widest head, a no-op.
    let b = common::f32_buffer(&[0.0; 4]);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let e = ctx()
        .encode_rope(
            &mut encoder,
            &RopeSpec::new(),
            &TensorView::new(&b, Layout::bhsd([0, 1, 1, 1 << 40])),
            Positions::Start(0),
        )
        .expect_err("a head past RopeSpec::MAX_HEAD_DIM");
    assert!(matches!(e, Error::InvalidHeadDim { .. }), "{e}");
    let report = ctx()
        .encode_rope(
            &mut encoder,
            &RopeSpec::new(),
            &TensorView::new(&b, Layout::bhsd([0, 1, 1, RopeSpec::MAX_HEAD_DIM])),
            Positions::Start(0),
        )
        .expect("empty view");
    assert_eq!(report.dispatches, 0);
}

#[test]
fn shape_arithmetic_never_overflows() {
    let b = common::f32_buffer(&[0.0; 64]);
    let ids = common::u32_buffer(&[0; 4]);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let spec = RopeSpec::new();
    let rope = |encoder: &mut wgpu::CommandEncoder, layout: Layout, positions| {
        ctx().encode_rope(encoder, &spec, &TensorView::new(&b, layout), positions)
    };
    // Empty views with huge offsets, strides, batch or seq: no-ops.
    for layout in [
        Layout::strided([0, 1, 1, 8], [u64::MAX, u64::MAX, u64::MAX]).with_offset(u64::MAX),
        Layout::bhsd([u64::MAX, 0, u64::MAX, 8]),
        Layout::bshd(Dims {
            batch: 1 << 40,
            heads: 0,
            seq: 1 << 40,
            head_dim: 8,
        }),
    ] {
        for positions in [
            Positions::Start(u32::MAX),
            Positions::Ids(ArrayView::new(&ids)),
            Positions::BatchStarts(ArrayView::new(&ids)),
        ] {
            let report = rope(&mut encoder, layout, positions).expect("empty view: no-op");
            assert_eq!(report.dispatches, 0);
        }
    }
    // Non-empty views too large for any index: typed errors.
    for (layout, positions) in [
        (Layout::bhsd([1, 1, u64::MAX, 8]), Positions::Start(0)),
        (
            Layout::bhsd([1, 1, u64::MAX, 8]),
            Positions::BatchStarts(ArrayView::new(&ids)),
        ),
        (
            Layout::bhsd([u64::MAX, 2, 2, 8]),
            Positions::Ids(ArrayView::new(&ids)),
        ),
        (Layout::bhsd([2, u64::MAX, 2, 2]), Positions::Start(0)),
        (
            Layout::strided([2, 1, 1, 8], [u64::MAX, 0, 0]).with_offset(1),
            Positions::Start(0),
        ),
    ] {
        let e = rope(&mut encoder, layout, positions).expect_err("too large");
        assert!(
            matches!(
                e,
                Error::ShapeOverflow { .. } | Error::BufferTooSmall { .. }
            ),
            "{layout:?}: {e}"
        );
    }
    // Per-row starts of a host view with seq = u64::MAX: an error.
    let mut data = vec![0.0f32; 8];
    let e = ctx()
        .rope_host(
            &spec,
            Layout::bhsd([1, 1, u64::MAX, 8]),
            &mut data,
            HostPositions::BatchStarts(&[5]),
        )
        .expect_err("seq = u64::MAX");
    assert!(
        matches!(
            e,
            Error::ShapeOverflow { .. } | Error::PositionOverflow { .. }
        ),
        "{e}"
    );
    assert!(Layout::bhsd([2, u64::MAX, 2, 2]).end().is_err());
    assert!(
        Layout::bshd(Dims {
            batch: 2,
            heads: u64::MAX,
            seq: u64::MAX,
            head_dim: 2
        })
        .end()
        .is_err()
    );
}

#[test]
fn public_helpers_are_total() {
    // Short or empty slices, and positions past u32::MAX: None.
    let (b, s) = (2, 3);
    for p in [
        HostPositions::BatchStarts(&[]),
        HostPositions::Ids(&[1, 2]),
        HostPositions::Axes(&[1, 2, 3]),
        HostPositions::varlen(&[], None),
        HostPositions::varlen(&[0, 3], Some(&[])),
    ] {
        assert_eq!(p.position(b, s, 1, 2, 2), None, "{p:?}");
        assert!(p.check_lengths(b, s).is_err(), "{p:?}");
    }
    assert_eq!(HostPositions::Start(u32::MAX).position(1, 2, 0, 1, 0), None);
    assert_eq!(
        HostPositions::Start(u32::MAX).position(1, 1, 0, 0, 0),
        Some(u32::MAX)
    );
    assert_eq!(
        HostPositions::BatchStarts(&[u32::MAX]).position(1, 2, 0, 1, 0),
        None
    );
    // Reference helpers at the ends of their ranges.
    // Indices past u64::MAX saturate, as documented.
    assert_eq!(
        PairLayout::HalfSplit.elements(u64::MAX, u64::MAX),
        (u64::MAX, u64::MAX)
    );
    assert_eq!(
        PairLayout::Interleaved.elements(8, u64::MAX),
        (u64::MAX, u64::MAX)
    );
    assert_eq!(PairLayout::Interleaved.elements(8, 3), (6, 7));
    assert_eq!(PairLayout::HalfSplit.elements(8, 3), (3, 7));
    let huge = Layout::strided([2, 2, 2, 2], [u64::MAX; 3]).with_offset(u64::MAX);
    assert_eq!(reference::row_start(&huge, 1, 1, 1), u64::MAX);
    let table = reference::sinusoidal_table(&SinusoidalSpec::new(4), 10, u32::MAX - 2);
    assert_eq!(table.len(), 3 * 4, "rows stop at position u32::MAX");
}

#[test]
fn a_row_larger_than_a_binding_says_it_cannot_be_split() {
    let capped = ctx().clone().with_max_binding_size(1024);
    let b = common::f32_buffer(&vec![0.5; 2048]);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let e = capped
        .encode_rope(
            &mut encoder,
            &RopeSpec::new(),
            &TensorView::new(&b, Layout::bhsd([1, 1, 2, 1024])),
            Positions::Start(0),
        )
        .expect_err("a 4 KiB row in 1 KiB bindings");
    assert!(matches!(e, Error::RowTooLarge { .. }), "{e}");
    assert!(e.to_string().contains("cannot be split"), "{e}");
}

#[test]
fn f16_on_a_device_created_without_it_says_to_request_it() {
    let (device, queue) = device(adapter().limits(), wgpu::Features::empty());
    let ctx = PosEnc::new(&device, &queue).expect("context");
    let b = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 1024,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    let e = ctx
        .encode_rope(
            &mut encoder,
            &RopeSpec::new(),
            &TensorView::new(&b, Layout::bhsd([1, 1, 4, 8])).with_dtype(Dtype::F16),
            Positions::Start(0),
        )
        .expect_err("no SHADER_F16 on this device");
    assert!(e.to_string().contains("DeviceDescriptor"), "{e}");
}

#[test]
fn caches_stay_bounded_over_a_long_decode_loop_and_fresh_buffers() {
    let ctx = ctx().clone();
    ctx.clear_caches();
    let within = |u: CacheUsage| {
        u.frequency_buffers <= CacheUsage::MAX_FREQUENCY_BUFFERS
            && u.frequency_bytes <= CacheUsage::MAX_FREQUENCY_BYTES
            && u.bind_groups <= CacheUsage::MAX_BIND_GROUPS
            && u.held_bytes <= CacheUsage::MAX_HELD_BYTES
    };
    // 10 000 decode steps with dynamic NTK past its original length: new frequencies at
    // every step.
    let spec = RopeSpec::new().scaling(Scaling::DynamicNtk {
        factor: 2.0,
        original_max_position_embeddings: 64,
    });
    let q = common::f32_buffer(&vec![0.5; 4 * 64]);
    let view = TensorView::new(
        &q,
        Layout::bshd(Dims {
            batch: 1,
            heads: 4,
            seq: 1,
            head_dim: 64,
        }),
    );
    let mut peak = CacheUsage::default();
    for step in 0..10_000u32 {
        let mut encoder = ctx.device().create_command_encoder(&Default::default());
        ctx.encode_rope(&mut encoder, &spec, &view, Positions::Start(64 + step))
            .expect("decode step");
        if step % 500 == 0 {
            ctx.queue().submit([encoder.finish()]);
            ctx.device()
                .poll(wgpu::PollType::wait_indefinitely())
                .expect("poll");
        }
        let u = ctx.cache_usage();
        assert!(within(u), "step {step}: {u:?}");
        peak.frequency_buffers = peak.frequency_buffers.max(u.frequency_buffers);
    }
    assert_eq!(peak.frequency_buffers, CacheUsage::MAX_FREQUENCY_BUFFERS);
    // Fresh 8 MiB buffers, one pass each, dropped right after: the cache holds at most
    // MAX_HELD_BYTES of them.
    let mut held_peak = 0;
    for i in 0..40 {
        let fresh = ctx.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("fresh"),
            size: 8 << 20,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let mut encoder = ctx.device().create_command_encoder(&Default::default());
        ctx.encode_rope(
            &mut encoder,
            &RopeSpec::new(),
            &TensorView::new(&fresh, Layout::bhsd([1, 1, 64, 64])),
            Positions::Start(i),
        )
        .expect("pass");
        drop(fresh);
        let u = ctx.cache_usage();
        assert!(within(u), "buffer {i}: {u:?}");
        held_peak = held_peak.max(u.held_bytes);
    }
    assert!(
        held_peak > 8 << 20,
        "the cache keeps recent passes: {held_peak}"
    );
    ctx.clear_caches();
    let u = ctx.cache_usage();
    assert_eq!(
        (u.frequency_buffers, u.bind_groups, u.held_bytes),
        (0, 0, 0)
    );
}

#[test]
fn the_demo_prints_its_errors_and_exits_non_zero() {
    // `cargo test` builds the examples beside the test binaries.
    let exe = std::env::current_exe().expect("test binary");
    let demo = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("examples").join("demo"))
        .expect("target dir");
    assert!(demo.exists(), "{} not built", demo.display());
    for arg in ["0", "abc", "99999999999"] {
        let out = std::process::Command::new(&demo)
            .args(["--seq", arg])
            .output()
            .expect("run the demo");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "--seq {arg}: {stderr}");
        assert!(
            stderr.contains("give a whole number of tokens") && !stderr.contains("panicked"),
            "--seq {arg}: {stderr}"
        );
    }
}
