//! The browser suite: the crate on a browser's WebGPU (Chromium's Dawn, on SwiftShader in
//! CI), through the async API, against the f64 reference, with poisoned guards and gaps so
//! that an element written that should not be, or one left unwritten, fails.
//!
//! Every kernel family and the main variants: both pair layouts, partial rotary, strided
//! views with offsets, every position mode (start, per-row starts, ids, varlen with offsets,
//! M-RoPE axes), Q+K with GQA in one dispatch, out of place across layouts, vLLM's cos/sin
//! cache, bf16, the sinusoidal table and add (and at f32 timesteps), tensors split over
//! bindings, the fused QKV →
//! KV-cache call, exact angles at positions up to `u32::MAX` (as the browser's compiler builds
//! the integer reduction), a caller's device with WebGPU's default limits, f16 (the clear
//! error where the adapter has no `shader-f16`), a page without WebGPU, the roofline
//! timer, and a typed error for bad input. Every comparison also asserts that the browser
//! reported no WebGPU error outside an error scope (the validation of submitted work).
//!
//! `scripts/wasm-cargo.sh test --test web` (wasm-bindgen-test-runner drives headless
//! Chromium through chromedriver; flags in `tests/web/webdriver.json`).
#![cfg(target_arch = "wasm32")]

#[path = "common/data.rs"]
mod data;

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use data::{
    Rng, assert_matches, assert_one_rounding, bits, expected_rope, guarded_input, guarded_u16,
    poison, widen,
};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};
use wgpu::util::DeviceExt;
use wgpu_posenc::reference::{self, HostCacheIndex};
use wgpu_posenc::roofline::{Roofline, Timer};
use wgpu_posenc::{
    ArrayView, CacheIndex, CosSinCache, Dims, Dtype, Error, HostPositions, KvCache, Layout,
    PairLayout, PosEnc, PositionGrid, Positions, QkvCall, RopeCall, RopeSpec, Scaling,
    SinusoidalSpec, TensorView,
};

wasm_bindgen_test_configure!(run_in_browser);

/// f32 results: within 1e-6 of the reference, as natively.
const TOL: f64 = 1e-6;

thread_local! {
    static CTX: RefCell<Option<PosEnc>> = const { RefCell::new(None) };
}

/// WebGPU errors outside any error scope (the browser's validation of submitted work, which
/// would otherwise only reach the console): every comparison asserts there were none.
static UNCAPTURED: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[track_caller]
fn assert_no_uncaptured_errors() {
    let errors = std::mem::take(&mut *UNCAPTURED.lock().unwrap_or_else(|e| e.into_inner()));
    assert!(errors.is_empty(), "WebGPU reported: {errors:#?}");
}

/// One context for the page (its pipelines are compiled once), made on first use.
async fn ctx() -> PosEnc {
    if let Some(ctx) = CTX.with(|c| c.borrow().clone()) {
        return ctx;
    }
    let ctx = PosEnc::with_default_adapter_async()
        .await
        .unwrap_or_else(|e| panic!("the browser suite needs a WebGPU adapter: {e}"));
    let info = ctx.adapter_info().expect("picked adapter");
    web_sys::console::log_1(&format!("adapter: {} ({:?})", info.name, info.backend).into());
    ctx.device().on_uncaptured_error(Arc::new(|e| {
        let mut errors = UNCAPTURED.lock().unwrap_or_else(|e| e.into_inner());
        errors.push(e.to_string());
    }));
    CTX.with(|c| *c.borrow_mut() = Some(ctx.clone()));
    ctx
}

fn buffer(ctx: &PosEnc, bytes: &[u8]) -> wgpu::Buffer {
    // A binding needs at least one word.
    let contents = if bytes.is_empty() { &[0; 4][..] } else { bytes };
    ctx.device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("web test data"),
            contents,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        })
}

fn f32_buffer(ctx: &PosEnc, data: &[f32]) -> wgpu::Buffer {
    buffer(ctx, bytemuck::cast_slice(data))
}

fn u32_buffer(ctx: &PosEnc, data: &[u32]) -> wgpu::Buffer {
    buffer(ctx, bytemuck::cast_slice(data))
}

/// `assert_matches` (untouched where the reference left an element, within `tol`
/// elsewhere), the largest error logged to the console (`-- --nocapture` shows it).
#[track_caller]
fn check(input: &[f32], gpu: &[f32], expected: &[f64], tol: f64, what: &str) {
    assert_no_uncaptured_errors();
    let worst = assert_matches(input, gpu, expected, tol, what);
    web_sys::console::log_1(&format!("{what}: max error {worst:.2e}").into());
}

/// Submits `encoder`, then reads `buffer` back as f32 values.
async fn read_f32(ctx: &PosEnc, buffer: &wgpu::Buffer, encoder: wgpu::CommandEncoder) -> Vec<f32> {
    ctx.queue().submit([encoder.finish()]);
    let bytes = ctx.read_buffer_async(buffer).await.expect("read back");
    assert_no_uncaptured_errors();
    bytemuck::cast_slice::<u8, f32>(&bytes).to_vec()
}

/// RoPE in place over a buffer holding `input`, recorded by `encode` (`encode_*` is the same
/// synchronous call as natively); returns the buffer after.
async fn run_rope(
    ctx: &PosEnc,
    input: &[f32],
    encode: impl FnOnce(&mut wgpu::CommandEncoder, &wgpu::Buffer),
) -> Vec<f32> {
    let data = f32_buffer(ctx, input);
    let mut encoder = ctx.device().create_command_encoder(&Default::default());
    encode(&mut encoder, &data);
    read_f32(ctx, &data, encoder).await
}

#[wasm_bindgen_test]
async fn rope_both_pair_layouts_partial_rotary_and_strides() {
    let ctx = ctx().await;
    let mut rng = Rng::new(1);
    let shape = [2, 3, 37, 64];
    // Padded rows, a gap between heads, an odd offset: the gaps are poisoned.
    let strided = Layout::strided(shape, [3 * 40 * 72 + 5, 40 * 72, 72]).with_offset(7);
    for pair_layout in [PairLayout::HalfSplit, PairLayout::Interleaved] {
        for (layout, r) in [(Layout::bhsd(shape), 64), (strided, 48), (strided, 64)] {
            let spec = RopeSpec::new()
                .pair_layout(pair_layout)
                .base(500_000.0)
                .rotary_dim(r);
            let input = guarded_input(&mut rng, &layout, 9);
            let gpu = run_rope(&ctx, &input, |encoder, buffer| {
                let view = TensorView::new(buffer, layout);
                ctx.encode_rope(encoder, &spec, &view, Positions::Start(1234))
                    .expect("encode");
            })
            .await;
            let expected = expected_rope(&spec, &layout, &input, HostPositions::Start(1234));
            let what = format!("{pair_layout:?} r={r} {layout:?}");
            check(&input, &gpu, &expected, TOL, &what);
        }
    }
}

#[wasm_bindgen_test]
async fn every_position_mode_through_the_async_host_method() {
    let ctx = ctx().await;
    let mut rng = Rng::new(2);
    let layout = Layout::bhsd([3, 2, 11, 32]);
    let ids: Vec<u32> = (0..33).map(|_| rng.range(0, 70_000) as u32).collect();
    let starts = [5, 0, 4_000_000_000];
    let spec = RopeSpec::new();
    let modes: [(&str, HostPositions<'_>); 3] = [
        ("ids", HostPositions::Ids(&ids)),
        ("per-row starts", HostPositions::BatchStarts(&starts)),
        ("start", HostPositions::Start(77)),
    ];
    for (what, positions) in modes {
        let input = guarded_input(&mut rng, &layout, 6);
        let mut gpu = input.clone();
        ctx.rope_host_async(&spec, layout, &mut gpu, positions)
            .await
            .expect(what);
        let expected = expected_rope(&spec, &layout, &input, positions);
        check(&input, &gpu, &expected, TOL, what);
    }

    // Varlen: three packed sequences of 5, 0 and 9 tokens, with and without offsets.
    let packed = Layout::bhsd([1, 4, 14, 16]);
    let cu = [0, 5, 5, 14];
    let offsets = [100, 7, 65_000];
    for offsets in [None, Some(&offsets[..])] {
        let positions = HostPositions::varlen(&cu, offsets);
        let input = guarded_input(&mut rng, &packed, 6);
        let mut gpu = input.clone();
        ctx.rope_host_async(&spec, packed, &mut gpu, positions)
            .await
            .expect("varlen");
        let expected = expected_rope(&spec, &packed, &input, positions);
        check(&input, &gpu, &expected, TOL, &format!("varlen {offsets:?}"));
    }

    // M-RoPE (Qwen2-VL's sections, and interleaved as Qwen3-VL): three axes per token.
    let vl = Layout::bhsd([1, 2, 9, 128]);
    let axes: Vec<u32> = (0..27).map(|_| rng.range(0, 5000) as u32).collect();
    for (section, interleaved) in [([16, 24, 24], false), ([24, 20, 20], true)] {
        let spec = RopeSpec::new().base(1e6).mrope(section, interleaved);
        let input = guarded_input(&mut rng, &vl, 6);
        let mut gpu = input.clone();
        ctx.rope_host_async(&spec, vl, &mut gpu, HostPositions::Axes(&axes))
            .await
            .expect("mrope");
        let expected = expected_rope(&spec, &vl, &input, HostPositions::Axes(&axes));
        check(&input, &gpu, &expected, TOL, &format!("mrope {section:?}"));
    }
}

#[wasm_bindgen_test]
async fn q_and_k_with_grouped_query_attention_in_one_dispatch() {
    let ctx = ctx().await;
    let mut rng = Rng::new(3);
    let q_layout = Layout::bhsd([2, 8, 21, 64]).with_offset(3);
    let k_layout = Layout::bshd(Dims {
        batch: 2,
        heads: 2,
        seq: 21,
        head_dim: 64,
    });
    let spec = RopeSpec::new().scaling(Scaling::Linear { factor: 4.0 });
    let q = guarded_input(&mut rng, &q_layout, 5);
    let k = guarded_input(&mut rng, &k_layout, 5);
    let (qb, kb) = (f32_buffer(&ctx, &q), f32_buffer(&ctx, &k));
    let mut encoder = ctx.device().create_command_encoder(&Default::default());
    let report = ctx
        .encode_rope_qk(
            &mut encoder,
            &spec,
            &TensorView::new(&qb, q_layout),
            &TensorView::new(&kb, k_layout),
            Positions::Start(40),
        )
        .expect("encode");
    assert_eq!(report.dispatches, 1);
    let q_gpu = read_f32(&ctx, &qb, encoder).await;
    let k_gpu = read_f32(
        &ctx,
        &kb,
        ctx.device().create_command_encoder(&Default::default()),
    )
    .await;
    let eq = expected_rope(&spec, &q_layout, &q, HostPositions::Start(40));
    let ek = expected_rope(&spec, &k_layout, &k, HostPositions::Start(40));
    check(&q, &q_gpu, &eq, TOL, "q");
    check(&k, &k_gpu, &ek, TOL, "k");
}

#[wasm_bindgen_test]
async fn out_of_place_across_layouts_copies_the_tail() {
    let ctx = ctx().await;
    let mut rng = Rng::new(4);
    let shape = [1, 4, 17, 40];
    let src_layout = Layout::bhsd(shape).with_offset(2);
    let dst_layout = Layout::bshd(Dims::from_logical(shape)).with_offset(6);
    let spec = RopeSpec::new().rotary_dim(24).inverse(true);
    let src = guarded_input(&mut rng, &src_layout, 4);
    let dst: Vec<f32> = (0..dst_layout.end().unwrap() as usize + 4)
        .map(poison)
        .collect();
    let (sb, db) = (f32_buffer(&ctx, &src), f32_buffer(&ctx, &dst));
    let mut encoder = ctx.device().create_command_encoder(&Default::default());
    let call = RopeCall::new(TensorView::new(&sb, src_layout), Positions::Start(11))
        .with_output(TensorView::new(&db, dst_layout));
    ctx.encode_rope_call(&mut encoder, &spec, &call)
        .expect("encode");
    let src_gpu = read_f32(&ctx, &sb, encoder).await;
    let dst_gpu = read_f32(
        &ctx,
        &db,
        ctx.device().create_command_encoder(&Default::default()),
    )
    .await;
    assert!(bits(&src_gpu) == bits(&src), "the source is left as it was");
    let mut expected = widen(&dst);
    reference::rope_out(
        &spec,
        &src_layout,
        &widen(&src),
        &dst_layout,
        &mut expected,
        HostPositions::Start(11),
        None,
    );
    check(&dst, &dst_gpu, &expected, TOL, "out of place");
}

#[wasm_bindgen_test]
async fn vllm_cos_sin_cache_gives_the_cached_angles() {
    let ctx = ctx().await;
    let mut rng = Rng::new(5);
    let (r, max_pos) = (32u64, 300u64);
    // vLLM's cos_sin_cache, [max_pos, r]: r/2 cos then r/2 sin, in f32.
    let freqs = reference::inv_freq(r, 10_000.0);
    let mut cache = Vec::new();
    for p in 0..max_pos as u32 {
        let angles: Vec<(f64, f64)> = freqs.iter().map(|&f| reference::sincos(p, f)).collect();
        cache.extend(angles.iter().map(|&(_, c)| c as f32));
        cache.extend(angles.iter().map(|&(s, _)| s as f32));
    }
    let cache_buffer = f32_buffer(&ctx, &cache);
    let layout = Layout::bhsd([1, 3, 25, 48]);
    let spec = RopeSpec::new().rotary_dim(r);
    let ids: Vec<u32> = (0..25).map(|_| rng.range(0, max_pos) as u32).collect();
    let ids_buffer = u32_buffer(&ctx, &ids);
    let flag = u32_buffer(&ctx, &[0]);
    let input = guarded_input(&mut rng, &layout, 5);
    let gpu = run_rope(&ctx, &input, |encoder, buffer| {
        let cache =
            CosSinCache::vllm(&cache_buffer, max_pos, r).with_overflow_flag(ArrayView::new(&flag));
        let call = RopeCall::new(
            TensorView::new(buffer, layout),
            Positions::Ids(ArrayView::new(&ids_buffer)),
        )
        .with_cache(cache);
        ctx.encode_rope_call(encoder, &spec, &call).expect("encode");
    })
    .await;
    let fresh = ctx.device().create_command_encoder(&Default::default());
    let flag = read_f32(&ctx, &flag, fresh).await[0].to_bits();
    assert_eq!(flag, 0, "every position is in the cache");
    // The cached values are f32 roundings of the exact angles: 1e-6 holds them too.
    let expected = expected_rope(&spec, &layout, &input, HostPositions::Ids(&ids));
    check(&input, &gpu, &expected, 2.0 * TOL, "cos/sin cache");
}

/// RoPE in place over 16-bit `input` of `dtype` (the element type a tensor of `layout`
/// holds): the call's error, or the values after.
async fn rope_u16(
    ctx: &PosEnc,
    input: &[u16],
    dtype: Dtype,
    spec: &RopeSpec,
    layout: Layout,
) -> wgpu_posenc::Result<Vec<u16>> {
    let mut padded = input.to_vec();
    // Buffers hold whole u32 words.
    padded.resize(input.len().next_multiple_of(2), 0);
    let data = buffer(ctx, bytemuck::cast_slice(&padded));
    let mut encoder = ctx.device().create_command_encoder(&Default::default());
    let view = TensorView::new(&data, layout).with_dtype(dtype);
    ctx.encode_rope(&mut encoder, spec, &view, Positions::Start(999))?;
    let words = read_f32(ctx, &data, encoder).await;
    Ok(bytemuck::cast_slice::<f32, u16>(&words)[..input.len()].to_vec())
}

#[wasm_bindgen_test]
async fn bf16_within_one_rounding() {
    use half::bf16;
    const BF16: (i32, i32) = (7, -126);
    let ctx = ctx().await;
    let value = |b: u16| f64::from(bf16::from_bits(b).to_f32());
    let mut rng = Rng::new(6);
    for (pair_layout, layout) in [
        (
            PairLayout::HalfSplit,
            Layout::bhsd([2, 3, 19, 64]).with_offset(4),
        ),
        (
            PairLayout::Interleaved,
            Layout::bhsd([1, 2, 7, 10]).with_offset(3),
        ),
    ] {
        let input = guarded_u16(&mut rng, &layout, 5, |v| bf16::from_f32(v).to_bits());
        let spec = RopeSpec::new().pair_layout(pair_layout);
        let gpu = rope_u16(&ctx, &input, Dtype::BF16, &spec, layout)
            .await
            .expect("bf16 runs on every adapter");
        let mut expected: Vec<f64> = input.iter().map(|&v| value(v)).collect();
        reference::rope(&spec, &layout, &mut expected, HostPositions::Start(999));
        assert_one_rounding(&input, &gpu, value, &expected, BF16, &format!("{layout:?}"));
    }
}

#[wasm_bindgen_test]
async fn f16_within_one_rounding_or_a_clear_error() {
    use half::f16;
    const F16: (i32, i32) = (10, -14);
    let ctx = ctx().await;
    let value = |b: u16| f16::from_bits(b).to_f64();
    let layout = Layout::bhsd([1, 3, 11, 32]).with_offset(2);
    let input = guarded_u16(&mut Rng::new(13), &layout, 5, |v| {
        f16::from_f32(v).to_bits()
    });
    let spec = RopeSpec::new();
    let result = rope_u16(&ctx, &input, Dtype::F16, &spec, layout).await;
    if ctx.device().features().contains(wgpu::Features::SHADER_F16) {
        let gpu = result.expect("f16 on an adapter with shader-f16");
        let mut expected: Vec<f64> = input.iter().map(|&v| value(v)).collect();
        reference::rope(&spec, &layout, &mut expected, HostPositions::Start(999));
        assert_one_rounding(&input, &gpu, value, &expected, F16, "f16");
    } else {
        let err = result.expect_err("no shader-f16");
        assert!(
            matches!(err, Error::MissingFeature { feature, .. } if feature == wgpu::Features::SHADER_F16),
            "{err}"
        );
        assert!(err.to_string().contains("f16"), "{err}");
    }
}

#[wasm_bindgen_test]
async fn sinusoidal_table_and_add() {
    let ctx = ctx().await;
    let mut rng = Rng::new(7);
    let spec = SinusoidalSpec::new(96);
    let table = ctx
        .sinusoidal_table_host_async(&spec, 50, 1000)
        .await
        .expect("table");
    let expected = reference::sinusoidal_table(&spec, 50, 1000);
    let err = table
        .iter()
        .zip(&expected)
        .map(|(&g, &r)| (f64::from(g) - r).abs())
        .fold(0.0, f64::max);
    assert!(err <= TOL, "table: {err:e}");

    // fairseq's padding: ids at the padding index get no encoding.
    let spec = SinusoidalSpec::new(64).padding_idx(1);
    let layout = Layout::bsd(2, 13, 64).with_offset(5);
    let ids: Vec<u32> = (0..26)
        .map(|i| {
            if i % 5 == 0 {
                1
            } else {
                rng.range(2, 9000) as u32
            }
        })
        .collect();
    let input = guarded_input(&mut rng, &layout, 7);
    let mut gpu = input.clone();
    ctx.sinusoidal_add_host_async(&spec, layout, &mut gpu, HostPositions::Ids(&ids), 8.0)
        .await
        .expect("add");
    let mut expected = widen(&input);
    reference::sinusoidal_add(&spec, &layout, &mut expected, HostPositions::Ids(&ids), 8.0);
    // x * 8 + PE: values up to 9.
    check(&input, &gpu, &expected, 9.0 * TOL, "sinusoidal add");
}

#[wasm_bindgen_test]
async fn timestep_embeddings_at_f32_timesteps() {
    // diffusers' `Timesteps(256, flip_sin_to_cos=True, 0)` on fractional, large and negative
    // timesteps, and an odd width with scale 1000 (the tail element, whole revolutions).
    let ctx = ctx().await;
    let t = [0.0f32, 0.5, 999.0, 3500.0, 261.75, -17.25, 1e6 + 0.125];
    for spec in [
        SinusoidalSpec::timesteps(256, true, 0.0),
        SinusoidalSpec::timesteps(33, false, 1.0).freq_scale(1000.0),
    ] {
        let d = spec.d_model;
        let layout = Layout::rows(t.len() as u64, d);
        let got = ctx
            .sinusoidal_table_at_host_async(&spec, layout, HostPositions::float(&t))
            .await
            .expect("timesteps");
        let expected: Vec<f64> = t
            .iter()
            .flat_map(|&p| reference::sinusoidal_row_at(&spec, p))
            .collect();
        let input = vec![0.0f32; got.len()];
        check(
            &input,
            &got,
            &expected,
            TOL,
            &format!("timesteps, width {d}"),
        );
    }
}

#[wasm_bindgen_test]
async fn rope_over_position_axes_at_f32_coordinates() {
    // FLUX's per-axis frequency lists (4 + 14 + 14 pairs) at Qwen-Image-like centered,
    // negative and fractional f32 coordinates on three axes, Q in BSHD with guards.
    let ctx = ctx().await;
    let mut rng = Rng::new(28);
    let layout = Layout::bshd(Dims {
        batch: 1,
        heads: 3,
        seq: 40,
        head_dim: 64,
    })
    .with_offset(2);
    let spec = RopeSpec::new()
        .pair_layout(PairLayout::Interleaved)
        .axes_rope([4, 14, 14]);
    let axes: Vec<u32> = (0..3 * 40)
        .map(|i| ((i as f32 - 60.0) * 0.625).to_bits())
        .collect();
    let ids = u32_buffer(&ctx, &axes);
    let input = guarded_input(&mut rng, &layout, 4);
    let gpu = run_rope(&ctx, &input, |encoder, buffer| {
        let view = TensorView::new(buffer, layout);
        let positions = Positions::FloatAxes(ArrayView::new(&ids));
        ctx.encode_rope(encoder, &spec, &view, positions)
            .expect("encode");
    })
    .await;
    let mut expected = widen(&input);
    reference::rope(
        &spec,
        &layout,
        &mut expected,
        HostPositions::FloatAxes(&axes),
    );
    check(&input, &gpu, &expected, TOL, "rope over f32 position axes");
}

#[wasm_bindgen_test]
async fn positions_made_on_the_gpu_then_rope_in_one_encoder() {
    // Qwen-Image's grid (text on the diagonal, then a centered 5 x 7 image: negative
    // positions) written by the position grid kernel after 3 poisoned words, RoPE at them in
    // the same encoder; the grid's words against the host's bit for bit, through the async
    // readback too.
    let ctx = ctx().await;
    let grid = PositionGrid::qwen_image(4, &[[1, 5, 7]]);
    let n = grid.tokens();
    let host = grid.positions(1).expect("grid");
    assert_eq!(
        ctx.position_grid_host_async(&grid, 1).await.expect("host"),
        host
    );
    let ids = u32_buffer(&ctx, &vec![0x7fc0_0001; 3 * n as usize + 6]);
    let layout = Layout::bshd(Dims {
        batch: 1,
        heads: 2,
        seq: n,
        head_dim: 64,
    });
    let spec = RopeSpec::new()
        .pair_layout(PairLayout::Interleaved)
        .axes_rope([4, 14, 14]);
    let mut rng = Rng::new(29);
    let input = guarded_input(&mut rng, &layout, 0);
    let gpu = run_rope(&ctx, &input, |encoder, buffer| {
        let out = ArrayView::at(&ids, 12);
        ctx.encode_position_grid(encoder, &grid, 1, out)
            .expect("grid");
        let view = TensorView::new(buffer, layout);
        ctx.encode_rope(encoder, &spec, &view, Positions::FloatAxes(out))
            .expect("encode");
    })
    .await;
    let words: Vec<u32> = host.iter().map(|p| p.to_bits()).collect();
    let mut expected = widen(&input);
    reference::rope(
        &spec,
        &layout,
        &mut expected,
        HostPositions::FloatAxes(&words),
    );
    check(
        &input,
        &gpu,
        &expected,
        TOL,
        "rope at positions made on the GPU",
    );
}

#[wasm_bindgen_test]
async fn tensors_split_over_bindings_give_the_same_result() {
    let ctx = ctx().await;
    let capped = ctx.clone().with_max_binding_size(16 << 10);
    let mut rng = Rng::new(8);
    let layout = Layout::bhsd([2, 4, 150, 64]).with_offset(1);
    let starts = [3, 90_000];
    let starts_buffer = u32_buffer(&ctx, &starts);
    let spec = RopeSpec::new().base(1e6);
    let input = guarded_input(&mut rng, &layout, 5);
    let mut dispatches = 0;
    let gpu = run_rope(&ctx, &input, |encoder, buffer| {
        let view = TensorView::new(buffer, layout);
        let positions = Positions::BatchStarts(ArrayView::new(&starts_buffer));
        dispatches = capped
            .encode_rope(encoder, &spec, &view, positions)
            .expect("encode")
            .dispatches;
    })
    .await;
    assert!(
        dispatches > 8,
        "{dispatches} dispatches for 300 KiB over 16 KiB bindings"
    );
    let expected = expected_rope(&spec, &layout, &input, HostPositions::BatchStarts(&starts));
    check(&input, &gpu, &expected, TOL, "split");

    let spec = SinusoidalSpec::new(128);
    let rows = Layout::bsd(1, 100, 128);
    let input = guarded_input(&mut rng, &rows, 3);
    let mut gpu = input.clone();
    capped
        .sinusoidal_add_host_async(&spec, rows, &mut gpu, HostPositions::Start(5), 1.0)
        .await
        .expect("add");
    let mut expected = widen(&input);
    reference::sinusoidal_add(&spec, &rows, &mut expected, HostPositions::Start(5), 1.0);
    check(&input, &gpu, &expected, 2.0 * TOL, "split add");
}

#[wasm_bindgen_test]
async fn fused_qkv_into_a_kv_cache() {
    let ctx = ctx().await;
    let mut rng = Rng::new(9);
    let (batch, seq, q_heads, kv_heads, d, max_seq) = (2, 7, 4, 2, 64, 16);
    let qkv_layout = Layout::bshd(Dims {
        batch,
        heads: q_heads + 2 * kv_heads,
        seq,
        head_dim: d,
    })
    .with_offset(4);
    let cache_layout = |offset| Layout::bhsd([batch, kv_heads, max_seq, d]).with_offset(offset);
    let (k_layout, v_layout) = (cache_layout(3), cache_layout(8));
    let qkv = guarded_input(&mut rng, &qkv_layout, 5);
    let k: Vec<f32> = (0..k_layout.end().unwrap() as usize + 5)
        .map(poison)
        .collect();
    let v: Vec<f32> = (0..v_layout.end().unwrap() as usize + 5)
        .map(poison)
        .collect();
    // Distinct positions in each row (two tokens at one position would race for its slot),
    // out of order.
    let ids: Vec<u32> = [9, 0]
        .iter()
        .flat_map(|&start| (0..seq).map(move |s| start + (s * 3) % seq))
        .map(|p| p as u32)
        .collect();
    let (qkv_b, k_b, v_b) = (
        f32_buffer(&ctx, &qkv),
        f32_buffer(&ctx, &k),
        f32_buffer(&ctx, &v),
    );
    let ids_b = u32_buffer(&ctx, &ids);
    let flag = u32_buffer(&ctx, &[0]);
    let spec = RopeSpec::new().pair_layout(PairLayout::Interleaved);
    let call = QkvCall::new(
        TensorView::new(&qkv_b, qkv_layout),
        kv_heads,
        Positions::Ids(ArrayView::new(&ids_b)),
        KvCache {
            k: TensorView::new(&k_b, k_layout),
            v: TensorView::new(&v_b, v_layout),
            index: CacheIndex::Position,
            overflow_flag: Some(ArrayView::new(&flag)),
        },
    );
    let mut encoder = ctx.device().create_command_encoder(&Default::default());
    ctx.encode_qkv(&mut encoder, &spec, &call).expect("encode");
    let qkv_gpu = read_f32(&ctx, &qkv_b, encoder).await;
    let fresh = || ctx.device().create_command_encoder(&Default::default());
    let k_gpu = read_f32(&ctx, &k_b, fresh()).await;
    let v_gpu = read_f32(&ctx, &v_b, fresh()).await;
    let flag_gpu = read_f32(&ctx, &flag, fresh()).await;
    assert_eq!(flag_gpu[0].to_bits(), 0, "no position past the cache");
    let (mut eqkv, mut ek, mut ev) = (widen(&qkv), widen(&k), widen(&v));
    reference::qkv_cache(
        &spec,
        &qkv_layout,
        &mut eqkv,
        kv_heads,
        HostPositions::Ids(&ids),
        None,
        (&k_layout, &mut ek),
        (&v_layout, &mut ev),
        HostCacheIndex::Position,
        None,
    );
    check(&qkv, &qkv_gpu, &eqkv, TOL, "qkv (Q rotated in place)");
    check(&k, &k_gpu, &ek, TOL, "K cache");
    check(&v, &v_gpu, &ev, TOL, "V cache");
}

#[wasm_bindgen_test]
async fn the_roofline_timer_runs_on_the_browser_clock() {
    let ctx = ctx().await;
    let mut rng = Rng::new(10);
    let data = rng.values(1 << 16);
    let buf = f32_buffer(&ctx, &data);
    let roofline = Roofline::new(&ctx);
    for timer in [Timer::new(&ctx), Timer::wall()] {
        let seconds = timer
            .time_async(&ctx, |encoder| {
                roofline
                    .encode_identity(encoder, &buf, 0, buf.size())
                    .map(drop)
            })
            .await
            .expect("timed");
        assert!(
            seconds.is_finite() && seconds >= 0.0,
            "{} timer: {seconds}",
            timer.kind()
        );
    }
    let after = read_f32(
        &ctx,
        &buf,
        ctx.device().create_command_encoder(&Default::default()),
    )
    .await;
    assert!(bits(&data) == bits(&after), "the identity changes nothing");
    ctx.check_device().await.expect("no device error");
}

#[wasm_bindgen_test]
async fn bad_input_is_a_typed_error() {
    let ctx = ctx().await;
    let layout = Layout::bhsd([1, 2, 8, 16]);
    let mut short = vec![0.5f32; 100];
    let err = ctx
        .rope_host_async(
            &RopeSpec::new(),
            layout,
            &mut short,
            HostPositions::Start(0),
        )
        .await
        .expect_err("100 values for a 256-element view");
    assert!(
        matches!(
            err,
            Error::HostLength {
                needed: 256,
                got: 100
            }
        ),
        "{err}"
    );
    let mut data = vec![0.5f32; 256];
    let err = ctx
        .rope_host_async(
            &RopeSpec::new().rotary_dim(17),
            layout,
            &mut data,
            HostPositions::Start(0),
        )
        .await
        .expect_err("odd rotary dim");
    assert!(
        matches!(
            err,
            Error::InvalidRotaryDim {
                rotary_dim: 17,
                head_dim: 16
            }
        ),
        "{err}"
    );
    assert!(data.iter().all(|&v| v == 0.5), "nothing written on error");
}

#[wasm_bindgen_test]
async fn exact_angles_at_the_end_of_the_u32_range() {
    // The angle's integer reduction compiled by the browser's shader compiler (Tint), not
    // naga: positions up to u32::MAX, against the reference's real-number angle.
    let ctx = ctx().await;
    let mut rng = Rng::new(11);
    let layout = Layout::bhsd([1, 2, 64, 128]);
    let spec = RopeSpec::new().base(500_000.0);
    for start in [u32::MAX - 63, 1 << 31, 3_000_000_000] {
        let input = guarded_input(&mut rng, &layout, 4);
        let mut gpu = input.clone();
        ctx.rope_host_async(&spec, layout, &mut gpu, HostPositions::Start(start))
            .await
            .expect("rope");
        let expected = expected_rope(&spec, &layout, &input, HostPositions::Start(start));
        check(&input, &gpu, &expected, TOL, &format!("start {start}"));
    }
    let spec = SinusoidalSpec::new(256);
    let table = ctx
        .sinusoidal_table_host_async(&spec, 32, u32::MAX - 31)
        .await
        .expect("table");
    let expected = reference::sinusoidal_table(&spec, 32, u32::MAX - 31);
    let err = table
        .iter()
        .zip(&expected)
        .map(|(&g, &r)| (f64::from(g) - r).abs())
        .fold(0.0, f64::max);
    assert!(err <= 2e-7, "table at the end of the u32 range: {err:e}");
}

#[wasm_bindgen_test]
async fn a_callers_device_with_webgpus_default_limits_is_enough() {
    // As a page that already has its device: the default request, WebGPU's default limits.
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = instance
        .request_adapter(&Default::default())
        .await
        .expect("adapter");
    let (device, queue) = adapter
        .request_device(&Default::default())
        .await
        .expect("device with the default limits");
    let posenc = PosEnc::new(&device, &queue).expect("the default limits suffice");
    let mut rng = Rng::new(12);
    let layout = Layout::bshd(Dims::from_logical([2, 4, 33, 64])).with_offset(2);
    let input = guarded_input(&mut rng, &layout, 4);
    let mut gpu = input.clone();
    let spec = RopeSpec::new().pair_layout(PairLayout::Interleaved);
    posenc
        .rope_host_async(&spec, layout, &mut gpu, HostPositions::Start(9))
        .await
        .expect("rope on the caller's device");
    let expected = expected_rope(&spec, &layout, &input, HostPositions::Start(9));
    check(&input, &gpu, &expected, TOL, "caller's device");
}

#[wasm_bindgen_test]
async fn the_browsers_validation_errors_are_seen() {
    // The suite's check above can fail: an invalid copy (4 bytes past the end of a buffer)
    // on a device of its own reaches its handler by the time the next readback resolves.
    let ctx = PosEnc::with_default_adapter_async().await.expect("adapter");
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = seen.clone();
    ctx.device().on_uncaptured_error(Arc::new(move |e| {
        sink.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(e.to_string());
    }));
    let (a, b) = (f32_buffer(&ctx, &[1.0; 4]), f32_buffer(&ctx, &[2.0; 4]));
    let mut encoder = ctx.device().create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(&a, 4, &b, 0, 16);
    ctx.queue().submit([encoder.finish()]);
    let after = ctx.read_buffer_async(&b).await.expect("read back");
    assert_eq!(
        bytemuck::cast_slice::<u8, f32>(&after),
        [2.0; 4],
        "the copy did not run"
    );
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    // Dawn's words: the copy, then the submit of the invalid command buffer.
    assert!(
        seen.first().is_some_and(|e| e.contains("Copy range")),
        "{seen:?}"
    );
}

#[wasm_bindgen_test]
async fn a_page_without_webgpu_gets_the_error_that_says_so() {
    // The shared context first, so that no other test needs navigator.gpu while it is hidden.
    ctx().await;
    let hide = "Object.defineProperty(navigator, 'gpu', { value: undefined, configurable: true })";
    js_sys::eval(hide).expect("hide navigator.gpu");
    let result = PosEnc::with_default_adapter_async().await;
    js_sys::eval("delete navigator.gpu").expect("restore navigator.gpu");
    let err = result.expect_err("no WebGPU on the page");
    assert!(matches!(err, Error::NoWebGpu), "{err}");
    assert!(err.to_string().contains("--enable-unsafe-webgpu"), "{err}");
    // Restored: the page's WebGPU is there again.
    PosEnc::with_default_adapter_async()
        .await
        .expect("navigator.gpu restored");
}
