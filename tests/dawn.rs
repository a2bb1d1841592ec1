//! WebGPU's rules, checked by the implementation that enforces them.
//!
//! Real calls of every f32 and bf16 variant family run here on wgpu (and are compared with
//! the reference) while `wgpu_posenc::capture` records what they dispatch: the shader, its
//! override constants, every bind group entry, the workgroups, and the contents of every
//! buffer they read. Then:
//!
//! - `every_bind_group_keeps_webgpu_rules` checks every recorded bind group against
//!   WebGPU's binding rules (written here from the specification, not from the crate's own
//!   check): no two writable windows of one buffer overlap, no buffer is bound writable and
//!   read-only at once, offsets are aligned to WebGPU's 256 bytes;
//! - `dawn_replays_every_variant_family` replays the recording on Dawn, the WebGPU of Chrome
//!   (`tests/dawn/replay.mjs`, npm package `webgpu` on the SwiftShader Vulkan driver), which
//!   validates each dispatch and compares its results with the reference's.
//!
//! Needs (installed by `.ci/run`): `npm ci --prefix tests/dawn`, and Chromium's SwiftShader
//! (`apt-get install -y chromium libvulkan1`).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::{Rng, ctx, guarded_input, poison, widen};
use half::bf16;
use serde_json::json;
use wgpu::util::DeviceExt;
use wgpu_posenc::Dims;
use wgpu_posenc::capture::{Capture, CapturedPass};
use wgpu_posenc::{
    ArrayView, CacheIndex, CosSinCache, Dtype, FrequencyUnit, HostPositions, KvCache, Layout,
    MRopeOrder, NormWeight, OutputOrder, PairLayout, PosEnc, PositionGrid, Positions, QkNorm,
    QkvCall, RopeCall, RopeSpec, Scaling, SincosGrid, SinusoidalLayout, SinusoidalSpec, TensorView,
    reference,
};

/// WebGPU's default `minStorageBufferOffsetAlignment` (and Dawn's on SwiftShader).
const WEBGPU_ALIGN: u64 = 256;

/// How the elements of a checked buffer are stored.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    F32,
    Bf16,
    U32,
}

/// A buffer a call writes, with what it must hold after: `expected[i]` per element, and
/// the initial contents where the reference left an element as it was.
struct Check {
    buffer: wgpu::Buffer,
    kind: Kind,
    initial: Vec<u8>,
    expected: Vec<f64>,
}

/// One recorded call: what it dispatched and what its buffers must hold after.
struct Call {
    name: String,
    passes: Vec<CapturedPass>,
    checks: Vec<Check>,
}

/// The context under capture, and the calls recorded so far.
struct Recorder {
    ctx: PosEnc,
    capture: Capture,
    calls: Vec<Call>,
}

impl Recorder {
    fn new(base: &PosEnc) -> Self {
        let capture = Capture::new();
        let ctx = base
            .clone()
            .with_storage_offset_alignment(WEBGPU_ALIGN)
            .with_capture(&capture);
        Self {
            ctx,
            capture,
            calls: Vec::new(),
        }
    }

    fn bytes(&self, contents: &[u8]) -> wgpu::Buffer {
        let mut padded = contents.to_vec();
        padded.resize(contents.len().next_multiple_of(4).max(4), 0);
        let buffer = self
            .ctx
            .device()
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("dawn check data"),
                contents: &padded,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
            });
        self.capture.note_buffer(&buffer, &padded);
        buffer
    }

    fn f32(&self, data: &[f32]) -> wgpu::Buffer {
        self.bytes(bytemuck::cast_slice(data))
    }

    fn u32(&self, data: &[u32]) -> wgpu::Buffer {
        self.bytes(bytemuck::cast_slice(data))
    }

    fn u16(&self, data: &[u16]) -> wgpu::Buffer {
        self.bytes(bytemuck::cast_slice(data))
    }

    /// An f32 check: `expected` from the reference on `initial`.
    fn check_f32(&self, buffer: &wgpu::Buffer, initial: &[f32], expected: Vec<f64>) -> Check {
        Check {
            buffer: buffer.clone(),
            kind: Kind::F32,
            initial: bytemuck::cast_slice(initial).to_vec(),
            expected,
        }
    }

    fn check_bf16(&self, buffer: &wgpu::Buffer, initial: &[u16], expected: Vec<f64>) -> Check {
        let mut bytes: Vec<u8> = bytemuck::cast_slice(initial).to_vec();
        // The buffer holds whole words: the padding must stay as it was (zero).
        bytes.resize(bytes.len().next_multiple_of(4), 0);
        Check {
            buffer: buffer.clone(),
            kind: Kind::Bf16,
            initial: bytes,
            expected,
        }
    }

    /// Records `encode` as one call: runs it on wgpu, compares each checked buffer with the
    /// reference there, and keeps what it dispatched.
    fn call(
        &mut self,
        name: &str,
        encode: impl FnOnce(&PosEnc, &mut wgpu::CommandEncoder) -> wgpu_posenc::Result<()>,
        checks: Vec<Check>,
    ) {
        let device = self.ctx.device();
        let mut encoder = device.create_command_encoder(&Default::default());
        encode(&self.ctx, &mut encoder).unwrap_or_else(|e| panic!("{name}: {e}"));
        self.ctx.queue().submit([encoder.finish()]);
        for check in &checks {
            let got = read_bytes(&self.ctx, &check.buffer);
            let mismatches = compare(check, &got);
            assert!(mismatches.is_empty(), "{name} on wgpu: {mismatches:?}");
        }
        let passes = self.capture.take_passes();
        assert!(!passes.is_empty(), "{name}: nothing dispatched");
        self.calls.push(Call {
            name: name.to_string(),
            passes,
            checks,
        });
    }
}

fn read_bytes(ctx: &PosEnc, buffer: &wgpu::Buffer) -> Vec<u8> {
    ctx.read_buffer(buffer).expect("read back")
}

/// Element size, value, and the stored form of a value of a kind.
type Element = (usize, fn(&[u8]) -> f64, fn(f64) -> Vec<u8>);

fn element(kind: Kind) -> Element {
    match kind {
        Kind::F32 => (
            4,
            |b| f64::from(f32::from_le_bytes(b.try_into().expect("4 bytes"))),
            |v| (v as f32).to_le_bytes().to_vec(),
        ),
        Kind::Bf16 => (
            2,
            |b| f64::from(bf16::from_bits(u16::from_le_bytes(b.try_into().expect("2"))).to_f32()),
            |v| bf16::from_f64(v).to_bits().to_le_bytes().to_vec(),
        ),
        Kind::U32 => (
            4,
            |b| f64::from(u32::from_le_bytes(b.try_into().expect("4 bytes"))),
            |v| (v as u32).to_le_bytes().to_vec(),
        ),
    }
}

/// Tolerance `(abs, rel)` of a computed element: the f32 contract, or one bf16 rounding of
/// each side.
fn tolerance(kind: Kind) -> (f64, f64) {
    match kind {
        Kind::F32 => (1e-6, 0.0),
        Kind::Bf16 => (2e-6, 1.0 / 128.0),
        Kind::U32 => (0.0, 0.0),
    }
}

/// Per element of a check: `Some(value)` where the reference computed it, `None` where
/// the element must be as it was.
fn computed(check: &Check) -> Vec<Option<f64>> {
    let (size, value, _) = element(check.kind);
    check
        .expected
        .iter()
        .enumerate()
        .map(|(i, &e)| {
            let before = value(&check.initial[i * size..(i + 1) * size]);
            (e.to_bits() != before.to_bits()).then_some(e)
        })
        .collect()
}

/// Mismatches of `got` (the whole buffer) against a check, at most 5.
fn compare(check: &Check, got: &[u8]) -> Vec<String> {
    let (size, value, _) = element(check.kind);
    let (abs, rel) = tolerance(check.kind);
    let mut out = Vec::new();
    for (i, want) in computed(check).into_iter().enumerate() {
        let g = &got[i * size..(i + 1) * size];
        let ok = match want {
            None => g == &check.initial[i * size..(i + 1) * size],
            Some(e) => (value(g) - e).abs() <= abs + rel * e.abs(),
        };
        if !ok && out.len() < 5 {
            out.push(format!("element {i}: got {}, want {want:?}", value(g)));
        }
    }
    let tail = check.expected.len() * size;
    if got[tail..] != check.initial[tail..] && out.len() < 5 {
        out.push("padding after the last element changed".to_string());
    }
    out
}

/// The reference's f64 view of 16-bit input.
fn widen_bf16(x: &[u16]) -> Vec<f64> {
    x.iter()
        .map(|&v| f64::from(bf16::from_bits(v).to_f32()))
        .collect()
}

fn to_bf16(x: &[f32]) -> Vec<u16> {
    x.iter().map(|&v| bf16::from_f32(v).to_bits()).collect()
}

/// RoPE in place over one tensor of `dtype` (F32 or BF16).
fn rope(
    rec: &mut Recorder,
    name: &str,
    spec: &RopeSpec,
    layout: Layout,
    dtype: Dtype,
    host: HostPositions<'_>,
    rng: &mut Rng,
) {
    let input = guarded_input(rng, &layout, 11);
    let gpu = host.map(|v| rec.u32(v));
    let (buffer, check) = match dtype {
        Dtype::BF16 => {
            let data = to_bf16(&input);
            let mut expected = widen_bf16(&data);
            reference::rope(spec, &layout, &mut expected, host);
            let buffer = rec.u16(&data);
            let check = rec.check_bf16(&buffer, &data, expected);
            (buffer, check)
        }
        _ => {
            let mut expected = widen(&input);
            reference::rope(spec, &layout, &mut expected, host);
            let buffer = rec.f32(&input);
            let check = rec.check_f32(&buffer, &input, expected);
            (buffer, check)
        }
    };
    rec.call(
        name,
        |ctx, encoder| {
            let view = TensorView::new(&buffer, layout).with_dtype(dtype);
            ctx.encode_rope(encoder, spec, &view, gpu.as_ref().map(ArrayView::new))
                .map(drop)
        },
        vec![check],
    );
}

/// Q and K in one call: two buffers, or two views of one packed QKV buffer.
fn rope_qk(rec: &mut Recorder, name: &str, packed: bool, dtype: Dtype, rng: &mut Rng) {
    let spec = RopeSpec::new()
        .base(500_000.0)
        .scaling(Scaling::llama3())
        .pair_layout(PairLayout::HalfSplit);
    let (t, hq, hkv, d) = (19u64, 4u64, 2u64, 64u64);
    let host = HostPositions::Start(4090);
    let (q_layout, k_layout) = if packed {
        let row = (hq + 2 * hkv) * d;
        (
            Layout::strided([1, hq, t, d], [0, d, row]),
            Layout::strided([1, hkv, t, d], [0, d, row]).with_offset(hq * d),
        )
    } else {
        (
            Layout::bshd(Dims {
                batch: 1,
                heads: hq,
                seq: t,
                head_dim: d,
            }),
            Layout::bshd(Dims {
                batch: 1,
                heads: hkv,
                seq: t,
                head_dim: d,
            }),
        )
    };
    let whole = |l: &Layout| l.end().expect("valid") as usize;
    let mut q_in: Vec<f32> = (0..whole(&q_layout).max(whole(&k_layout)) + 64)
        .map(poison)
        .collect();
    let k_in = if packed {
        Vec::new()
    } else {
        guarded_input(rng, &k_layout, 17)
    };
    // Random values at every element of Q (and, packed, of K and V).
    for v in q_in.iter_mut().take(if packed {
        (t * (hq + 2 * hkv) * d) as usize
    } else {
        whole(&q_layout)
    }) {
        *v = rng.value();
    }
    let mut expected_q = widen(&q_in);
    reference::rope(&spec, &q_layout, &mut expected_q, host);
    let expected_k = if packed {
        reference::rope(&spec, &k_layout, &mut expected_q, host);
        Vec::new()
    } else {
        let mut e = widen(&k_in);
        reference::rope(&spec, &k_layout, &mut e, host);
        e
    };
    let gpu = host.map(|v| rec.u32(v));
    let (q_buf, k_buf, checks) = if dtype == Dtype::BF16 {
        let q16 = to_bf16(&q_in);
        let k16 = to_bf16(&k_in);
        let mut eq = widen_bf16(&q16);
        reference::rope(&spec, &q_layout, &mut eq, host);
        let mut ek = widen_bf16(&k16);
        if packed {
            reference::rope(&spec, &k_layout, &mut eq, host);
        } else {
            reference::rope(&spec, &k_layout, &mut ek, host);
        }
        let qb = rec.u16(&q16);
        let kb = (!packed).then(|| rec.u16(&k16));
        let mut checks = vec![rec.check_bf16(&qb, &q16, eq)];
        if let Some(kb) = &kb {
            checks.push(rec.check_bf16(kb, &k16, ek));
        }
        (qb, kb, checks)
    } else {
        let qb = rec.f32(&q_in);
        let kb = (!packed).then(|| rec.f32(&k_in));
        let mut checks = vec![rec.check_f32(&qb, &q_in, expected_q)];
        if let Some(kb) = &kb {
            checks.push(rec.check_f32(kb, &k_in, expected_k));
        }
        (qb, kb, checks)
    };
    rec.call(
        name,
        |ctx, encoder| {
            let q = TensorView::new(&q_buf, q_layout).with_dtype(dtype);
            let k = TensorView::new(k_buf.as_ref().unwrap_or(&q_buf), k_layout).with_dtype(dtype);
            let report =
                ctx.encode_rope_qk(encoder, &spec, &q, &k, gpu.as_ref().map(ArrayView::new))?;
            assert_eq!(report.dispatches, 1, "{name}: Q and K in one dispatch");
            Ok(())
        },
        checks,
    );
}

/// Out of place: into another buffer, or into the same buffer right after the source.
fn rope_out_of_place(
    rec: &mut Recorder,
    name: &str,
    same_buffer: bool,
    spec: RopeSpec,
    rng: &mut Rng,
) {
    let src_layout = Layout::bshd(Dims {
        batch: 1,
        heads: 3,
        seq: 21,
        head_dim: 48,
    });
    let n = src_layout.end().expect("valid");
    let dst_layout = if same_buffer {
        Layout::bhsd([1, 3, 21, 48]).with_offset(n + 4)
    } else {
        Layout::bhsd([1, 3, 21, 48]).with_offset(8)
    };
    let host = HostPositions::Start(7);
    let mut src = guarded_input(rng, &src_layout, 0);
    let mut expected_dst;
    let checks;
    let (src_buf, dst_buf) = if same_buffer {
        src.resize((dst_layout.end().expect("valid") + 9) as usize, 0.0);
        for (i, v) in src.iter_mut().enumerate().skip(n as usize) {
            *v = poison(i);
        }
        let s = widen(&src);
        expected_dst = s.clone();
        reference::rope_out(
            &spec,
            &src_layout,
            &s,
            &dst_layout,
            &mut expected_dst,
            host,
            None,
        );
        let b = rec.f32(&src);
        checks = vec![rec.check_f32(&b, &src, expected_dst)];
        (b.clone(), b)
    } else {
        let dst: Vec<f32> = (0..dst_layout.end().expect("valid") as usize + 9)
            .map(poison)
            .collect();
        expected_dst = widen(&dst);
        reference::rope_out(
            &spec,
            &src_layout,
            &widen(&src),
            &dst_layout,
            &mut expected_dst,
            host,
            None,
        );
        let (sb, db) = (rec.f32(&src), rec.f32(&dst));
        checks = vec![
            rec.check_f32(&db, &dst, expected_dst),
            rec.check_f32(&sb, &src, widen(&src)),
        ];
        (sb, db)
    };
    rec.call(
        name,
        |ctx, encoder| {
            let call = RopeCall::new(TensorView::new(&src_buf, src_layout), host_start(&host))
                .with_output(TensorView::new(&dst_buf, dst_layout));
            ctx.encode_rope_call(encoder, &spec, &call).map(drop)
        },
        checks,
    );
}

fn host_start(host: &HostPositions<'_>) -> Positions<ArrayView<'static>> {
    match *host {
        HostPositions::Start(p) => Positions::Start(p),
        _ => unreachable!("a start"),
    }
}

/// RoPE with angles from a vLLM-style cos/sin cache, at ids past its end (clamped, flagged).
fn rope_cache(rec: &mut Recorder, rng: &mut Rng) {
    let (max_pos, r) = (64u64, 32u64);
    let spec = RopeSpec::new();
    let layout = Layout::bshd(Dims {
        batch: 1,
        heads: 2,
        seq: 9,
        head_dim: 32,
    });
    let mut cache = vec![0f32; (max_pos * r) as usize];
    for p in 0..max_pos {
        for (j, f) in reference::inv_freq(r, 10_000.0).iter().enumerate() {
            let (s, c) = reference::sincos(p as u32, *f);
            cache[(p * r) as usize + j] = c as f32;
            cache[(p * r + r / 2) as usize + j] = s as f32;
        }
    }
    let ids: Vec<u32> = (0..9).map(|i| (i * 9) as u32 % 80).collect();
    let clamped: Vec<u32> = ids.iter().map(|&p| p.min(max_pos as u32 - 1)).collect();
    let input = guarded_input(rng, &layout, 5);
    let mut expected = widen(&input);
    let table = reference::HostCache {
        values: &cache,
        max_pos,
        row_stride: r,
        cos_offset: 0,
        sin_offset: r / 2,
    };
    reference::rope_out(
        &spec,
        &layout,
        &widen(&input),
        &layout,
        &mut expected,
        HostPositions::Ids(&clamped),
        Some(&table),
    );
    let (x, cache_buf, ids_buf) = (rec.f32(&input), rec.f32(&cache), rec.u32(&ids));
    let flag = rec.u32(&[0, 0, 0, 0]);
    let checks = vec![
        rec.check_f32(&x, &input, expected),
        Check {
            buffer: flag.clone(),
            kind: Kind::U32,
            initial: vec![0; 16],
            expected: vec![1.0, 0.0, 0.0, 0.0],
        },
    ];
    rec.call(
        "rope, vLLM cos/sin cache, ids past the cache (clamped and flagged)",
        |ctx, encoder| {
            let cache =
                CosSinCache::vllm(&cache_buf, max_pos, r).with_overflow_flag(ArrayView::new(&flag));
            let call = RopeCall::new(
                TensorView::new(&x, layout),
                Positions::Ids(ArrayView::new(&ids_buf)),
            )
            .with_cache(cache);
            ctx.encode_rope_call(encoder, &spec, &call).map(drop)
        },
        checks,
    );
}

/// The sinusoidal table in bf16 (whole words per vec4 group, and a scalar row width).
fn sinusoidal_bf16(rec: &mut Recorder) {
    for d in [64u64, 6] {
        let spec = SinusoidalSpec::new(d);
        let layout = Layout::rows(21, d).with_offset(2);
        let initial: Vec<u16> = (0..(layout.end().expect("valid") + 5) as usize)
            .map(|i| 0x7fc0 | (i as u16 & 0x3f))
            .collect();
        let mut expected = widen_bf16(&initial);
        let rows = reference::sinusoidal_table(&spec, 21, 77);
        expected[2..2 + rows.len()].copy_from_slice(&rows);
        let buffer = rec.u16(&initial);
        let check = rec.check_bf16(&buffer, &initial, expected);
        rec.call(
            &format!("sinusoidal table, d_model {d}, bf16"),
            |ctx, encoder| {
                let view = TensorView::new(&buffer, layout).with_dtype(Dtype::BF16);
                ctx.encode_sinusoidal_table(encoder, &spec, &view, 77)
                    .map(drop)
            },
            vec![check],
        );
    }
}

fn sinusoidal(rec: &mut Recorder, rng: &mut Rng) {
    for (layout, name) in [
        (SinusoidalLayout::Interleaved, "interleaved"),
        (SinusoidalLayout::Concatenated, "concatenated"),
    ] {
        let spec = SinusoidalSpec::new(96).layout(layout);
        let table_layout = Layout::rows(37, 96).with_offset(4);
        let initial: Vec<f32> = (0..table_layout.end().expect("valid") as usize + 7)
            .map(poison)
            .collect();
        let mut expected = widen(&initial);
        let rows = reference::sinusoidal_table(&spec, 37, 1000);
        expected[4..4 + rows.len()].copy_from_slice(&rows);
        let buffer = rec.f32(&initial);
        let check = rec.check_f32(&buffer, &initial, expected);
        rec.call(
            &format!("sinusoidal table, {name}"),
            |ctx, encoder| {
                let view = TensorView::new(&buffer, table_layout);
                ctx.encode_sinusoidal_table(encoder, &spec, &view, 1000)
                    .map(drop)
            },
            vec![check],
        );
    }
    // Fused add at per-token ids with a padding index, f32 and bf16.
    let spec = SinusoidalSpec::new(64).padding_idx(1);
    let layout = Layout::bsd(2, 13, 64);
    let ids: Vec<u32> = (0..26)
        .map(|i| if i % 5 == 0 { 1 } else { 2 + i * 3 })
        .collect();
    let host = HostPositions::Ids(&ids);
    for dtype in [Dtype::F32, Dtype::BF16] {
        let input = guarded_input(rng, &layout, 9);
        let gpu = host.map(|v| rec.u32(v));
        let (buffer, check) = if dtype == Dtype::BF16 {
            let data = to_bf16(&input);
            let mut expected = widen_bf16(&data);
            reference::sinusoidal_add(&spec, &layout, &mut expected, host, 8.0);
            let b = rec.u16(&data);
            let c = rec.check_bf16(&b, &data, expected);
            (b, c)
        } else {
            let mut expected = widen(&input);
            reference::sinusoidal_add(&spec, &layout, &mut expected, host, 8.0);
            let b = rec.f32(&input);
            let c = rec.check_f32(&b, &input, expected);
            (b, c)
        };
        rec.call(
            &format!("sinusoidal add, ids with padding, {dtype:?}"),
            |ctx, encoder| {
                let view = TensorView::new(&buffer, layout).with_dtype(dtype);
                ctx.encode_sinusoidal_add(
                    encoder,
                    &spec,
                    &view,
                    gpu.as_ref().map(ArrayView::new),
                    8.0,
                )
                .map(drop)
            },
            vec![check],
        );
    }
}

/// diffusers' timestep projection at f32 timesteps: `[cos | sin]` of width 256 as a table
/// (four pairs a lane), and an odd width (33: the scalar kernel, the tail element) added to
/// bf16 rows, with scale 1000 (whole revolutions in the third frequency word).
fn timesteps(rec: &mut Recorder, rng: &mut Rng) {
    let t: Vec<f32> = (0..12).map(|i| i as f32 * 83.25 - 1.5).collect();
    let host = HostPositions::float(&t);
    let spec = SinusoidalSpec::timesteps(256, true, 0.0);
    let layout = Layout::rows(12, 256).with_offset(4);
    let initial: Vec<f32> = (0..layout.end().expect("valid") as usize + 7)
        .map(poison)
        .collect();
    let mut expected = widen(&initial);
    reference::sinusoidal_table_at(&spec, &layout, &mut expected, host);
    let buffer = rec.f32(&initial);
    let check = rec.check_f32(&buffer, &initial, expected);
    let ids = host.map(|v| rec.u32(v));
    rec.call(
        "sinusoidal table at f32 timesteps, [cos | sin]",
        |ctx, encoder| {
            let view = TensorView::new(&buffer, layout);
            ctx.encode_sinusoidal_table_at(encoder, &spec, &view, ids.as_ref().map(ArrayView::new))
                .map(drop)
        },
        vec![check],
    );
    let spec = SinusoidalSpec::timesteps(33, false, 1.0).freq_scale(1000.0);
    let layout = Layout::bsd(2, 6, 33);
    let data = to_bf16(&guarded_input(rng, &layout, 5));
    let mut expected = widen_bf16(&data);
    reference::sinusoidal_add(&spec, &layout, &mut expected, host, 2.0);
    let buffer = rec.u16(&data);
    let check = rec.check_bf16(&buffer, &data, expected);
    rec.call(
        "sinusoidal add at f32 positions, odd width, scale 1000, bf16",
        |ctx, encoder| {
            let view = TensorView::new(&buffer, layout).with_dtype(Dtype::BF16);
            ctx.encode_sinusoidal_add(encoder, &spec, &view, ids.as_ref().map(ArrayView::new), 2.0)
                .map(drop)
        },
        vec![check],
    );
}

/// Sin-cos grids: timm's layout (cosines two blocks after their sines: a pair distance
/// other than the pair count) with a zero row, added to f32 patch embeddings.
fn grids(rec: &mut Recorder, rng: &mut Rng) {
    let grid = SincosGrid::timm_2d(64, [3, 5], 10_000.0, false, false)
        .expect("grid")
        .zero_rows(1);
    let layout = Layout::bsd(2, grid.rows(), 64);
    let input = guarded_input(rng, &layout, 7);
    let table = reference::sincos_grid(&grid);
    let mut expected = widen(&input);
    for b in 0..2 {
        for s in 0..grid.rows() {
            let at = reference::row_start(&layout, b, 0, s) as usize;
            for k in 0..64 {
                expected[at + k] = expected[at + k] * 0.5 + table[(s * 64) as usize + k];
            }
        }
    }
    let buffer = rec.f32(&input);
    let check = rec.check_f32(&buffer, &input, expected);
    rec.call(
        "sin-cos grid add, timm's layout, a zero row",
        |ctx, encoder| {
            let view = TensorView::new(&buffer, layout);
            ctx.encode_sincos_grid_add(encoder, &grid, &view, 0.5)
                .map(drop)
        },
        vec![check],
    );
}

/// FLUX.2's ids made on the GPU by a position grid (text, the latent, a reference image; two
/// batch rows) after 5 poisoned words, then RoPE over four f32 axes at them, in one encoder.
fn position_grid(rec: &mut Recorder, rng: &mut Rng) {
    let grid = PositionGrid::flux2(3, [4, 6], &[[2, 3]]);
    let positions = grid.positions(2).expect("grid");
    let guard = 5;
    let initial: Vec<u32> = (0..2 * guard + positions.len())
        .map(|i| poison(i).to_bits())
        .collect();
    let mut expected_ids: Vec<f64> = initial.iter().map(|&w| f64::from(w)).collect();
    for (k, p) in positions.iter().enumerate() {
        expected_ids[guard + k] = f64::from(p.to_bits());
    }
    let ids = rec.u32(&initial);
    let ids_check = Check {
        buffer: ids.clone(),
        kind: Kind::U32,
        initial: bytemuck::cast_slice(&initial).to_vec(),
        expected: expected_ids,
    };
    let spec = RopeSpec::new()
        .base(2000.0)
        .pair_layout(PairLayout::Interleaved)
        .axes_rope4([16, 16, 16, 16]);
    let layout = Layout::bshd(Dims {
        batch: 2,
        seq: grid.tokens(),
        heads: 2,
        head_dim: 128,
    })
    .with_offset(9);
    let input = guarded_input(rng, &layout, 9);
    let words: Vec<u32> = positions.iter().map(|p| p.to_bits()).collect();
    let mut expected = widen(&input);
    reference::rope(&spec, &layout, &mut expected, Positions::FloatAxes(&words));
    let x = rec.f32(&input);
    let x_check = rec.check_f32(&x, &input, expected);
    rec.call(
        "position grid (FLUX.2's ids, two rows), then RoPE over four f32 axes at them",
        |ctx, encoder| {
            let out = ArrayView::at(&ids, guard as u64 * 4);
            ctx.encode_position_grid(encoder, &grid, 2, out)?;
            let view = TensorView::new(&x, layout);
            ctx.encode_rope(encoder, &spec, &view, Positions::FloatAxes(out))
                .map(drop)
        },
        vec![ids_check, x_check],
    );
}

/// The fused QKV call: f32 with ids, GQA and a BHSD cache, Q in place; bf16 with varlen
/// positions, a paged bf16 cache (a skipped slot) and Q into its own tensor.
fn fused(rec: &mut Recorder, rng: &mut Rng) {
    let ids: Vec<u32> = (0..10).map(|i| (i * 37 + 5) % 300).collect();
    let cu = [0u32, 3, 7];
    let slots: [i32; 7] = [0, 1, 2, -1, 5, 6, 7];
    // QK-norm on both calls: Gemma's on the bf16 one, summed by subgroup shuffles where the
    // recording adapter has them (its token's invocations fit SwiftShader's subgroup of 4
    // too); Qwen3's on the f32 one, summed through workgroup memory with a barrier.
    let norm = |d: usize, weight| QkNorm {
        q_weight: (0..d).map(|i| (i as f32 * 0.37).sin() * 0.5).collect(),
        k_weight: (0..d).map(|i| (i as f32 * 0.71).cos() * 0.5).collect(),
        eps: 1e-6,
        weight,
    };
    for bf in [false, true] {
        let [batch, seq, q_heads, kv_heads, d] = if bf {
            [1, 7, 2, 1, 16]
        } else {
            [2, 5, 4, 2, 32]
        };
        let norm = if bf {
            norm(16, NormWeight::OnePlus)
        } else {
            norm(32, NormWeight::Scale)
        };
        let heads = q_heads + 2 * kv_heads;
        let qkv_layout = Layout::bshd(Dims {
            batch,
            heads,
            seq,
            head_dim: d,
        })
        .with_offset(4);
        let q_layout = Layout::bhsd([batch, q_heads, seq, d]).with_offset(2);
        let cache_layout = |offset| {
            if bf {
                Layout::bshd(Dims {
                    batch: 1,
                    heads: kv_heads,
                    seq: 12,
                    head_dim: d,
                })
                .with_offset(offset)
            } else {
                Layout::bhsd([batch, kv_heads, 300, d]).with_offset(offset)
            }
        };
        let (k_layout, v_layout) = (cache_layout(6), cache_layout(10));
        let len = |l: &Layout| (l.end().expect("layout") + 4) as usize;
        let poisoned = |n: usize| -> Vec<f32> { (0..n).map(poison).collect() };
        let qkv_in = guarded_input(rng, &qkv_layout, 4);
        let (q_in, k_in, v_in) = (
            poisoned(len(&q_layout)),
            poisoned(len(&k_layout)),
            poisoned(len(&v_layout)),
        );
        let host = if bf {
            HostPositions::varlen(&cu, None)
        } else {
            HostPositions::Ids(&ids)
        };
        // The bf16 call writes Q out and K in DeepSeek-V3's HF order (PAIR_HALVES).
        let spec = if bf {
            RopeSpec::new()
                .pair_layout(PairLayout::Interleaved)
                .output_order(OutputOrder::PairHalves)
        } else {
            RopeSpec::new().pair_layout(PairLayout::HalfSplit)
        };
        let widen_as = |x: &[f32]| {
            if bf {
                widen_bf16(&to_bf16(x))
            } else {
                widen(x)
            }
        };
        let (mut qkv_e, mut q_e, mut k_e, mut v_e) = (
            widen_as(&qkv_in),
            widen_as(&q_in),
            widen_as(&k_in),
            widen_as(&v_in),
        );
        reference::qkv_cache(
            &spec,
            &qkv_layout,
            &mut qkv_e,
            kv_heads,
            host,
            bf.then_some((&q_layout, &mut q_e[..])),
            (&k_layout, &mut k_e),
            (&v_layout, &mut v_e),
            if bf {
                reference::HostCacheIndex::Slots(&slots)
            } else {
                reference::HostCacheIndex::Position
            },
            Some(&norm),
        );
        let upload = |rec: &Recorder, x: &[f32]| if bf { rec.u16(&to_bf16(x)) } else { rec.f32(x) };
        let (qkv, q, k, v) = (
            upload(rec, &qkv_in),
            upload(rec, &q_in),
            upload(rec, &k_in),
            upload(rec, &v_in),
        );
        let gpu = host.map(|a| rec.u32(a));
        let slot_words: Vec<u32> = slots.iter().map(|&x| x as u32).collect();
        let slot_buffer = rec.u32(&slot_words);
        let check = |rec: &Recorder, b: &wgpu::Buffer, x: &[f32], e: Vec<f64>| {
            if bf {
                rec.check_bf16(b, &to_bf16(x), e)
            } else {
                rec.check_f32(b, x, e)
            }
        };
        let mut checks = vec![
            check(rec, &qkv, &qkv_in, qkv_e),
            check(rec, &k, &k_in, k_e),
            check(rec, &v, &v_in, v_e),
        ];
        if bf {
            checks.push(check(rec, &q, &q_in, q_e));
        }
        let dtype = if bf { Dtype::BF16 } else { Dtype::F32 };
        let name = if bf {
            "fused QKV, bf16, varlen, paged bf16 cache, Q out and K in pair halves, QK-norm \
             by subgroups"
        } else {
            "fused QKV, f32, ids, GQA, BHSD cache, Q in place, QK-norm by a barrier"
        };
        rec.call(
            name,
            |ctx, encoder| {
                let view = |b, l| TensorView::new(b, l).with_dtype(dtype);
                let cache = KvCache {
                    k: view(&k, k_layout),
                    v: view(&v, v_layout),
                    index: if bf {
                        CacheIndex::Slots(ArrayView::new(&slot_buffer))
                    } else {
                        CacheIndex::Position
                    },
                    overflow_flag: None,
                };
                let call = QkvCall::new(
                    view(&qkv, qkv_layout),
                    kv_heads,
                    gpu.as_ref().map(ArrayView::new),
                    cache,
                );
                let call = call.with_qk_norm(&norm);
                if bf {
                    ctx.encode_qkv(encoder, &spec, &call.with_q_out(view(&q, q_layout)))
                } else {
                    let barrier = ctx.clone().with_subgroups(false);
                    barrier.encode_qkv(encoder, &spec, &call)
                }
                .map(drop)
            },
            checks,
        );
    }
}

/// Every variant family, recorded once per test binary.
fn recorded() -> &'static Recorder {
    static RECORDED: OnceLock<Recorder> = OnceLock::new();
    RECORDED.get_or_init(|| {
        let mut rec = Recorder::new(ctx());
        let mut rng = Rng::new(0xda3e);
        let yarn = RopeSpec::new()
            .base(1_000_000.0)
            .scaling(Scaling::yarn(4.0, 32_768));
        let starts = [3u32, 9000];
        let ids: Vec<u32> = (0..2 * 23).map(|i| (i * 977 + 13) % 200_000).collect();
        let cu = [0u32, 5, 5, 17, 30];
        let offsets = [100u32, 0, 7, 65_000];
        let axes: Vec<u32> = (0..3 * 2 * 11).map(|i| (i * 37) % 3000).collect();
        // Qwen-Image-like centered coordinates, negative and fractional, as f32 axes.
        let float_axes: Vec<u32> = (0..3 * 2 * 11)
            .map(|i| ((i as f32 - 33.0) * 1.75).to_bits())
            .collect();
        // FLUX.2-like ids on four axes (f32): the fourth, `l`, a text index.
        let float_axes4: Vec<u32> = (0..4 * 2 * 11)
            .map(|i| ((i % 29) as f32 * 0.5 - 3.0).to_bits())
            .collect();
        // Pooled history tokens (Helios'): 4 sets of three f32 axes, then 2 sets of u32 axes.
        let pooled_f32: Vec<u32> = (0..4 * 3 * 2 * 11)
            .map(|i| ((i % 37) as f32 * 0.75 - 5.0).to_bits())
            .collect();
        let pooled_u32: Vec<u32> = (0..2 * 3 * 2 * 11).map(|i| (i * 53) % 2000).collect();
        // Short factors of 0.003 raise every frequency 333-fold.
        let mut fast = RopeSpec::new()
            .frequency_unit(FrequencyUnit::Revolutions)
            .scaling(Scaling::LongRope(wgpu_posenc::LongRope {
                short_factor: vec![0.003; 8],
                long_factor: vec![1.0; 8],
                original_max_position_embeddings: 4096,
                max_position_embeddings: 8192,
                attention_factor: None,
            }));
        fast.scaling_seq_len = Some(16);
        let float_ids: Vec<u32> = (0..2 * 23)
            .map(|i| (i as f32 * -0.37 + 3.5).to_bits())
            .collect();
        let f32_cases: Vec<(&str, RopeSpec, Layout, HostPositions<'_>)> = vec![
            (
                "rope BHSD interleaved vec4",
                RopeSpec::new().pair_layout(PairLayout::Interleaved),
                Layout::bhsd([2, 3, 17, 64]),
                HostPositions::Start(5),
            ),
            (
                "rope BSHD half-split vec4, YaRN",
                yarn,
                Layout::bshd(Dims {
                    batch: 1,
                    heads: 4,
                    seq: 29,
                    head_dim: 128,
                }),
                HostPositions::Start(40_000),
            ),
            (
                "rope scalar, odd offset, partial rotary, inverse",
                RopeSpec::new().rotary_dim(6).inverse(true),
                Layout::bhsd([1, 2, 9, 10]).with_offset(3),
                HostPositions::Start(77),
            ),
            (
                "rope per-row starts",
                RopeSpec::new(),
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 2,
                    seq: 15,
                    head_dim: 32,
                }),
                HostPositions::BatchStarts(&starts),
            ),
            (
                "rope ids",
                RopeSpec::new().pair_layout(PairLayout::Interleaved),
                Layout::bhsd([2, 3, 23, 16]),
                HostPositions::Ids(&ids),
            ),
            (
                "rope varlen with offsets",
                RopeSpec::new(),
                Layout::bshd(Dims {
                    batch: 1,
                    heads: 2,
                    seq: 30,
                    head_dim: 32,
                }),
                HostPositions::varlen(&cu, Some(&offsets)),
            ),
            (
                "rope varlen",
                RopeSpec::new().pair_layout(PairLayout::Interleaved),
                Layout::bshd(Dims {
                    batch: 1,
                    heads: 3,
                    seq: 30,
                    head_dim: 8,
                }),
                HostPositions::varlen(&cu, None),
            ),
            (
                "rope M-RoPE sections (Qwen2-VL)",
                RopeSpec::new().mrope([4, 6, 6], false),
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 2,
                    seq: 11,
                    head_dim: 32,
                }),
                HostPositions::Axes(&axes),
            ),
            (
                "rope M-RoPE interleaved (Qwen3-VL)",
                RopeSpec::new().mrope([6, 5, 5], true),
                Layout::bhsd([2, 1, 11, 32]),
                HostPositions::Axes(&axes),
            ),
            (
                "rope per-axis frequencies (FLUX) at f32 axes, interleaved",
                RopeSpec::new()
                    .pair_layout(PairLayout::Interleaved)
                    .axes_rope([4, 14, 14]),
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 2,
                    seq: 11,
                    head_dim: 64,
                }),
                HostPositions::FloatAxes(&float_axes),
            ),
            (
                "rope 1-D at f32 positions, half-split",
                RopeSpec::new(),
                Layout::bhsd([2, 3, 23, 16]),
                HostPositions::Float(&float_ids),
            ),
            (
                "rope per-axis frequencies over four axes (FLUX.2) at f32 axes",
                RopeSpec::new()
                    .pair_layout(PairLayout::Interleaved)
                    .axes_rope4([4, 10, 10, 8]),
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 2,
                    seq: 11,
                    head_dim: 64,
                }),
                HostPositions::FloatAxes(&float_axes4),
            ),
            (
                "rope dealt frequencies over two axes (Pixtral's vision tower)",
                RopeSpec::new().axes_dealt([0, 16, 16]),
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 2,
                    seq: 11,
                    head_dim: 64,
                }),
                HostPositions::Axes(&axes),
            ),
            (
                "rope in revolutions a position (DINOv3's periods) at f32 axes",
                RopeSpec::new()
                    .axes_rope([0, 16, 16])
                    .base(100.0)
                    .frequency_unit(FrequencyUnit::Revolutions),
                Layout::bhsd([2, 2, 11, 64]),
                HostPositions::FloatAxes(&float_axes),
            ),
            (
                "rope at f32 positions, 333 whole revolutions a position (LongRoPE factors \
                 of 0.003, in revolutions)",
                fast,
                Layout::bhsd([2, 3, 23, 16]),
                HostPositions::Float(&float_ids),
            ),
            (
                "rope rising from pi/2 after 2 leading lanes (LTX's form over an inner \
                 dimension of 110) at f32 axes",
                RopeSpec::new()
                    .pair_layout(PairLayout::Interleaved)
                    .axes_rising([18, 18, 18], MRopeOrder::Interleaved)
                    .leading_lanes(2)
                    .rotary_dim(108),
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 1,
                    seq: 11,
                    head_dim: 110,
                }),
                HostPositions::FloatAxes(&float_axes),
            ),
            (
                "rope half-split in two blocks, one an axis (Gemma 4's vision tower's form)",
                RopeSpec::new().axes_rope([0, 16, 16]).pair_blocks(2),
                Layout::bhsd([2, 2, 11, 64]),
                HostPositions::Axes(&axes),
            ),
            (
                "rope from a learned table per head on three f32 axes (Mochi's form)",
                RopeSpec::new()
                    .pair_layout(PairLayout::Interleaved)
                    .learned(wgpu_posenc::LearnedFrequencies::new(
                        3,
                        2,
                        (0..3 * 2 * 32)
                            .map(|i| ((i * 37 % 101) as f64 - 50.0) / 40.0)
                            .collect(),
                    )),
                Layout::bhsd([2, 2, 11, 64]),
                HostPositions::FloatAxes(&float_axes),
            ),
            (
                "rope with cos and sin the mean of 4 sets of three f32 axes (Helios' pooled \
                 history tokens)",
                RopeSpec::new()
                    .pair_layout(PairLayout::Interleaved)
                    .axes_rope([10, 11, 11])
                    .pooled(4),
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 2,
                    seq: 11,
                    head_dim: 64,
                }),
                HostPositions::FloatAxes(&pooled_f32),
            ),
            (
                "rope with cos and sin the mean of 2 sets of u32 axes",
                RopeSpec::new().axes_rope([0, 16, 16]).pooled(2),
                Layout::bhsd([2, 2, 11, 64]),
                HostPositions::Axes(&pooled_u32),
            ),
            (
                "rope over interleaved pairs with cos and sin tiled for half-split ones, an \
                 axis a block (V-JEPA 2's table; LANE_ANGLES)",
                RopeSpec::new()
                    .pair_layout(PairLayout::Interleaved)
                    .axes_rope([10, 10, 10])
                    .pair_blocks(3)
                    .rotary_dim(60)
                    .table_layout(PairLayout::HalfSplit),
                Layout::bhsd([2, 2, 11, 64]),
                HostPositions::Axes(&axes),
            ),
            (
                "rope over half-split pairs with an interleaved cos and sin table at f32 axes \
                 (ERNIE-Image's)",
                RopeSpec::new()
                    .axes_rope([8, 12, 12])
                    .base(256.0)
                    .table_layout(PairLayout::Interleaved),
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 2,
                    seq: 11,
                    head_dim: 64,
                }),
                HostPositions::FloatAxes(&float_axes),
            ),
        ];
        for (name, spec, layout, host) in &f32_cases {
            rope(&mut rec, name, spec, *layout, Dtype::F32, *host, &mut rng);
        }
        for (name, spec, layout, host) in f32_cases[..5].iter().chain(&f32_cases[6..8]) {
            let name = format!("{name}, bf16");
            rope(&mut rec, &name, spec, *layout, Dtype::BF16, *host, &mut rng);
        }
        // Blocks: a binding cap that cuts the view along tokens (per-row starts past the
        // first block) and along heads (head blocks dispatched in pairs).
        let capped = rec.ctx.clone().with_max_binding_size(16 << 10);
        let base = std::mem::replace(&mut rec.ctx, capped);
        rope(
            &mut rec,
            "rope per-row starts, cut into token blocks",
            &RopeSpec::new(),
            Layout::bshd(Dims {
                batch: 2,
                heads: 2,
                seq: 150,
                head_dim: 32,
            }),
            Dtype::F32,
            HostPositions::BatchStarts(&starts),
            &mut rng,
        );
        rope(
            &mut rec,
            "rope BHSD cut into head blocks, paired",
            &RopeSpec::new().pair_layout(PairLayout::Interleaved),
            Layout::bhsd([1, 6, 40, 32]),
            Dtype::F32,
            HostPositions::Start(3),
            &mut rng,
        );
        rec.ctx = base;
        for (packed, dtype, name) in [
            (false, Dtype::F32, "rope Q+K, GQA, two buffers"),
            (
                true,
                Dtype::F32,
                "rope Q+K, GQA, views of one packed QKV buffer",
            ),
            (true, Dtype::BF16, "rope Q+K, packed QKV, bf16"),
        ] {
            rope_qk(&mut rec, name, packed, dtype, &mut rng);
        }
        let out_spec = RopeSpec::new().rotary_dim(32).base(10_000.0);
        rope_out_of_place(
            &mut rec,
            "rope out of place, two buffers",
            false,
            out_spec.clone(),
            &mut rng,
        );
        // DeepSeek-V3's HF order (the PAIR_HALVES override), four pairs a lane.
        rope_out_of_place(
            &mut rec,
            "rope out of place, interleaved pairs written as halves",
            false,
            out_spec
                .clone()
                .pair_layout(PairLayout::Interleaved)
                .output_order(OutputOrder::PairHalves),
            &mut rng,
        );
        rope_out_of_place(
            &mut rec,
            "rope out of place, output right after the source in one buffer",
            true,
            out_spec,
            &mut rng,
        );
        rope_cache(&mut rec, &mut rng);
        sinusoidal(&mut rec, &mut rng);
        sinusoidal_bf16(&mut rec);
        timesteps(&mut rec, &mut rng);
        grids(&mut rec, &mut rng);
        position_grid(&mut rec, &mut rng);
        fused(&mut rec, &mut rng);
        rec
    })
}

/// WebGPU's rules for the entries of one bind group, from the specification: "Writable
/// storage buffer binding aliasing", the usage scope rule (a buffer is either used
/// writable or read-only within one dispatch), and offset alignment.
fn rule_violations(rec: &Recorder) -> Vec<String> {
    let mut out = Vec::new();
    for call in &rec.calls {
        for (p, pass) in call.passes.iter().enumerate() {
            for (k, dispatch) in pass.dispatches.iter().enumerate() {
                let at = format!("{}: pass {p} dispatch {k}", call.name);
                let b = &dispatch.bindings;
                for e in b {
                    let size = rec.capture.buffer(e.buffer).expect("known").0.size();
                    if !e.offset.is_multiple_of(WEBGPU_ALIGN)
                        || !e.size.is_multiple_of(4)
                        || e.offset + e.size > size
                    {
                        out.push(format!("{at}: binding {} window {e:?}", e.binding));
                    }
                }
                for (i, x) in b.iter().enumerate() {
                    for y in &b[i + 1..] {
                        if x.buffer != y.buffer || (!x.writable && !y.writable) {
                            continue;
                        }
                        let overlap = x.offset < y.offset + y.size && y.offset < x.offset + x.size;
                        if overlap || x.writable != y.writable {
                            out.push(format!(
                                "{at}: bindings {} and {} of buffer {} ({x:?}, {y:?})",
                                x.binding, y.binding, x.buffer
                            ));
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn the_qk_norm_calls_record_both_sums() {
    // The replay checks Tint's reading of each: the subgroup sum where the recording device
    // has subgroups (lavapipe's Vulkan does), the barrier sum always.
    let rec = recorded();
    let sources = |suffix: &str| -> Vec<&str> {
        let call = rec.calls.iter().find(|c| c.name.ends_with(suffix));
        let call = call.unwrap_or_else(|| panic!("a call ending {suffix:?}"));
        call.passes
            .iter()
            .flat_map(|p| &p.dispatches)
            .map(|d| d.source.as_str())
            .collect()
    };
    let device = ctx().device();
    let subgroups = device.features().contains(wgpu::Features::SUBGROUP);
    if device.adapter_info().backend == wgpu::Backend::Vulkan {
        assert!(subgroups, "the Vulkan device was made without SUBGROUP");
    }
    let by_subgroups = sources("QK-norm by subgroups");
    assert!(!by_subgroups.is_empty());
    for source in by_subgroups {
        assert_eq!(source.contains("enable subgroups;"), subgroups);
    }
    for source in sources("QK-norm by a barrier") {
        assert!(!source.contains("enable subgroups;"));
        assert!(source.contains("workgroupBarrier"));
    }
}

#[test]
fn every_bind_group_keeps_webgpu_rules() {
    let rec = recorded();
    let violations = rule_violations(rec);
    assert!(
        violations.is_empty(),
        "{} violations, first: {:#?}",
        violations.len(),
        &violations[..violations.len().min(5)]
    );
    eprintln!("{} calls, every bind group valid", rec.calls.len());
}

/// Writes the recording in the format of `tests/dawn/README.md`.
fn write_capture(rec: &Recorder, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut pipelines: Vec<(String, String)> = Vec::new();
    let mut calls = Vec::new();
    for (c, call) in rec.calls.iter().enumerate() {
        let mut used: Vec<usize> = call
            .passes
            .iter()
            .flat_map(|p| &p.dispatches)
            .flat_map(|d| d.bindings.iter().map(|b| b.buffer))
            .collect();
        used.sort_unstable();
        used.dedup();
        let mut buffers = Vec::new();
        for &i in &used {
            let (buffer, contents) = rec.capture.buffer(i).expect("known");
            let contents = contents.unwrap_or_else(|| panic!("{}: buffer {i} unnoted", call.name));
            let file = format!("c{c}_b{i}.bin");
            std::fs::write(dir.join(&file), &contents)?;
            buffers.push(json!({"id": i, "size": buffer.size(), "init": file}));
        }
        let passes: Vec<_> = call
            .passes
            .iter()
            .map(|pass| {
                let dispatches: Vec<_> = pass
                    .dispatches
                    .iter()
                    .map(|d| {
                        let constants: serde_json::Map<String, serde_json::Value> = d
                            .constants
                            .iter()
                            .map(|(k, v)| (k.to_string(), json!(v)))
                            .collect();
                        let constants = serde_json::Value::Object(constants).to_string();
                        let key = (d.source.clone(), constants.clone());
                        let index = match pipelines.iter().position(|p| *p == key) {
                            Some(i) => i,
                            None => {
                                pipelines.push(key);
                                pipelines.len() - 1
                            }
                        };
                        let bindings: Vec<_> = d
                            .bindings
                            .iter()
                            .map(|b| {
                                json!({"binding": b.binding, "buffer": b.buffer,
                                       "offset": b.offset, "size": b.size})
                            })
                            .collect();
                        json!({"pipeline": index, "bindings": bindings,
                               "workgroups": d.workgroups})
                    })
                    .collect();
                json!({ "dispatches": dispatches })
            })
            .collect();
        let mut checks = Vec::new();
        for (k, check) in call.checks.iter().enumerate() {
            let index = rec
                .capture
                .index(&check.buffer)
                .expect("checked buffer is bound");
            let (size, _, store) = element(check.kind);
            let (abs, rel) = tolerance(check.kind);
            let mut bytes = check.initial.clone();
            let mut ranges: Vec<[f64; 4]> = Vec::new();
            for (i, want) in computed(check).into_iter().enumerate() {
                if let Some(v) = want {
                    bytes[i * size..(i + 1) * size].copy_from_slice(&store(v));
                    match ranges.last_mut() {
                        Some(r) if r[1] as usize == i => r[1] += 1.0,
                        _ => ranges.push([i as f64, i as f64 + 1.0, abs, rel]),
                    }
                }
            }
            let file = format!("c{c}_e{k}.bin");
            std::fs::write(dir.join(&file), &bytes)?;
            let dtype = match check.kind {
                Kind::F32 => "f32",
                Kind::Bf16 => "bf16",
                Kind::U32 => "u32",
            };
            checks.push(json!({"buffer": index, "expect": file, "dtype": dtype,
                               "tolerance": ranges}));
        }
        calls.push(
            json!({"name": call.name, "buffers": buffers, "passes": passes,
                          "checks": checks}),
        );
    }
    let mut pipeline_json = Vec::new();
    let mut features = Vec::new();
    for (p, (source, constants)) in pipelines.iter().enumerate() {
        let file = format!("p{p}.wgsl");
        std::fs::write(dir.join(&file), source)?;
        for (enable, feature) in [
            ("enable f16;", "shader-f16"),
            ("enable subgroups;", "subgroups"),
        ] {
            if source.contains(enable) && !features.contains(&feature) {
                features.push(feature);
            }
        }
        let constants: serde_json::Value = serde_json::from_str(constants).expect("json");
        // Layout 1 for the fused QKV kernel, 2 for the position grid, 0 for the pair passes.
        let layout = if source.starts_with("// wgpu-posenc fused ") {
            1
        } else if source.starts_with("// Position grids") {
            2
        } else {
            0
        };
        pipeline_json
            .push(json!({"wgsl": file, "entry": "main", "constants": constants, "layout": layout}));
    }
    // Written here from the shaders' declarations, not from the crate's tables.
    let entry = |binding, ty: &str| json!({"binding": binding, "type": ty});
    let (rw, ro) = ("storage", "read-only-storage");
    let pair = [
        (1, rw),
        (2, ro),
        (3, ro),
        (4, ro),
        (5, rw),
        (6, ro),
        (7, ro),
        (8, rw),
    ];
    let fused = [
        (1, rw),
        (2, ro),
        (3, ro),
        (4, ro),
        (5, rw),
        (8, rw),
        (9, rw),
        (10, rw),
    ];
    let grid = [(1, ro), (2, rw)];
    let layouts: Vec<Vec<serde_json::Value>> = [&pair[..], &fused[..], &grid[..]]
        .iter()
        .map(|l| {
            std::iter::once(entry(0, "uniform"))
                .chain(l.iter().map(|&(b, t)| entry(b, t)))
                .collect()
        })
        .collect();
    let manifest = json!({"layouts": layouts, "pipelines": pipeline_json, "features": features,
                          "calls": calls});
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string_pretty(&manifest).expect("json"),
    )
}

#[test]
fn dawn_replays_every_variant_family() {
    let rec = recorded();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "dawn-capture-{}",
        std::env::var("WGPU_BACKEND").unwrap_or_else(|_| "default".into())
    ));
    let _ = std::fs::remove_dir_all(&dir);
    write_capture(rec, &dir).expect("write the capture");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("bash")
        .arg(root.join("tests/dawn/run.sh"))
        .arg(&dir)
        .current_dir(root)
        .output()
        .unwrap_or_else(|e| panic!("running tests/dawn/run.sh: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}");
    assert!(
        out.status.success(),
        "Dawn rejected or miscomputed a call (exit {:?}). Needs `npm ci --prefix tests/dawn` \
         and Chromium's SwiftShader (`apt-get install -y chromium libvulkan1`); \
         .ci/run installs both.\n{stdout}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    // Every recorded call ran there (none skipped: every family here is f32 or bf16).
    let summary = stdout.lines().rev().find(|l| l.starts_with("replay:"));
    assert_eq!(
        summary,
        Some(format!("replay: {} passed, 0 failed, 0 skipped", rec.calls.len()).as_str()),
        "{stdout}"
    );
}
