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
#[path = "dawn/encodings.rs"]
mod encodings;
#[path = "dawn/families.rs"]
mod families;
#[path = "dawn/manifest.rs"]
mod manifest;
#[path = "dawn/qkv.rs"]
mod qkv;
#[path = "dawn/rope_calls.rs"]
mod rope_calls;
#[path = "dawn/rules.rs"]
mod rules;

use std::path::{Path, PathBuf};

use common::ctx;
use families::recorded;
use half::bf16;
use manifest::write_capture;
use rules::rule_violations;
use wgpu::util::DeviceExt;
use wgpu_posenc::PosEnc;
use wgpu_posenc::capture::{Capture, CapturedPass};

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
