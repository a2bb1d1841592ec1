//! Random calls, valid and invalid, through every public entry point (proptest): each one
//! either returns an error, or matches the f64 reference within the contract with every
//! element outside the output views unchanged; none panics or aborts. Drawn here: RoPE in
//! every form (in place, Q and K, out of place, a cos/sin cache, host slices), the
//! sinusoidal table and add (GPU and host; diffusers' timestep form and f32 positions drawn
//! in `random_calls/sinusoidal.rs`), views of one buffer, the fused QKV call with its
//! caches (`random_calls/fused.rs`), `RopeSpec::angle_words` and the WGSL export helpers
//! (`random_calls/export.rs`), position grids and Mochi's checkpoint reader
//! (`random_calls/position_grids.rs`), and `HfRope::from_config` on generated config.json values in
//! a child process that survives aborts (`random_calls/configs.rs`). Failing cases are kept
//! by proptest in `tests/random_calls.proptest-regressions` and replayed first.
//!
//! `POSENC_RANDOM_CALLS` sets the number of calls (default 10 000; the fused calls are an
//! eighth of it, angle words and grid calls a tenth, exported bindings a fiftieth),
//! `POSENC_RANDOM_SEED`
//! the seed (fixed by default, so that a run can be repeated).
#![cfg(not(target_arch = "wasm32"))]

#[path = "random_calls/cases.rs"]
mod cases;
mod common;
#[path = "random_calls/configs.rs"]
mod configs;
#[path = "random_calls/export.rs"]
mod export;
#[path = "random_calls/fused.rs"]
mod fused;
#[path = "random_calls/one_buffer.rs"]
mod one_buffer;
#[path = "random_calls/position_grids.rs"]
mod position_grids;
#[path = "random_calls/runner.rs"]
mod runner;
#[path = "random_calls/sinusoidal.rs"]
mod sinusoidal;

use cases::case_strategy;
use common::{ctx, poison};
use one_buffer::{one_buffer_strategy, run_one_buffer};
use runner::run;
use std::sync::atomic::{AtomicU32, Ordering};

use half::bf16;
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, RngSeed};
use wgpu_posenc::{Dtype, HostPositions, Layout, RopeSpec, SinusoidalLayout};

/// Calls made, and calls that ran and were compared with the reference (the rest returned
/// errors).
static CALLS: AtomicU32 = AtomicU32::new(0);
static CHECKED: AtomicU32 = AtomicU32::new(0);
/// Of those compared, the calls with pooled sets of positions.
static POOLED: AtomicU32 = AtomicU32::new(0);
/// Of those compared, the calls with a cos/sin table laid out for the other pair layout.
static TABLED: AtomicU32 = AtomicU32::new(0);
/// The same (calls, checked) for the fused calls, angle words, exported bindings and grids.
static FUSED: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];
static WORDS: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];
static EXPORTS: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];
static GRIDS: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];
static POSITION_GRIDS: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];

/// Counts a call (and whether it was compared with the reference), says so every `every`.
fn tally(what: &str, counts: &[AtomicU32; 2], checked: bool, every: u32) {
    let n = counts[0].fetch_add(1, Ordering::Relaxed) + 1;
    let c = counts[1].fetch_add(u32::from(checked), Ordering::Relaxed) + u32::from(checked);
    if n.is_multiple_of(every) {
        eprintln!("{n} {what}, {c} compared with the reference");
    }
}

/// f32 results against the reference, relative to the value's magnitude (at least 1): the
/// 1e-6 of the other GPU tests.
const TOL: f64 = 1e-6;

/// Which entry point a case calls.
#[derive(Clone, Copy, Debug)]
enum Entry {
    Rope,
    RopeQk,
    RopeOut,
    RopeCache,
    RopeHost,
    SinTable,
    SinAdd,
    SinTableHost,
    SinAddHost,
}

/// Host positions of a case, as owned arrays.
#[derive(Clone, Debug)]
enum Pos {
    Start(u32),
    BatchStarts(Vec<u32>),
    Ids(Vec<u32>),
    Varlen(Vec<u32>, Option<Vec<u32>>),
    Axes(Vec<u32>),
    Float(Vec<u32>),
    FloatAxes(Vec<u32>),
}

impl Pos {
    fn host(&self) -> HostPositions<'_> {
        match self {
            Pos::Start(p) => HostPositions::Start(*p),
            Pos::BatchStarts(v) => HostPositions::BatchStarts(v),
            Pos::Ids(v) => HostPositions::Ids(v),
            Pos::Varlen(c, o) => HostPositions::varlen(c, o.as_deref()),
            Pos::Axes(v) => HostPositions::Axes(v),
            Pos::Float(v) => HostPositions::Float(v),
            Pos::FloatAxes(v) => HostPositions::FloatAxes(v),
        }
    }
}

#[derive(Clone, Debug)]
struct Case {
    entry: Entry,
    layout: Layout,
    dtype: Dtype,
    spec: RopeSpec,
    positions: Pos,
    k_heads: u64,
    scale: f32,
    sin_layout: SinusoidalLayout,
    /// The sinusoidal frequency form (`sinusoidal::spec`).
    sin_form: u8,
    seed: u64,
}

/// A view's data: random values in its rows, poison elsewhere (`pad` extra elements).
fn data(layout: &Layout, pad: usize, seed: u64) -> Option<Vec<f32>> {
    let end = usize::try_from(layout.end().ok()?).ok()?;
    if end > 1 << 22 {
        return None;
    }
    let mut rng = common::Rng::new(seed);
    Some(common::guarded_input(&mut rng, layout, pad))
        .map(|v| if v.is_empty() { vec![poison(0); 4] } else { v })
        .map(|mut v| {
            v.resize(end.max(4) + pad, poison(end));
            v
        })
}

fn to_bytes(x: &[f32], dtype: Dtype) -> Vec<u8> {
    match dtype {
        Dtype::BF16 => {
            let mut b: Vec<u8> = x
                .iter()
                .flat_map(|&v| bf16::from_f32(v).to_bits().to_le_bytes())
                .collect();
            b.resize(b.len().next_multiple_of(4), 0);
            b
        }
        _ => bytemuck::cast_slice(x).to_vec(),
    }
}

/// The values a buffer of `dtype` holds, as f64.
fn values(bytes: &[u8], dtype: Dtype, n: usize) -> Vec<f64> {
    match dtype {
        Dtype::BF16 => bytes
            .chunks_exact(2)
            .take(n)
            .map(|c| f64::from(bf16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32()))
            .collect(),
        _ => bytes
            .chunks_exact(4)
            .take(n)
            .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
    }
}

fn buffer(bytes: &[u8]) -> wgpu::Buffer {
    use wgpu::util::DeviceExt;
    ctx()
        .device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("random call"),
            contents: bytes,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
        })
}

fn read(buffer: &wgpu::Buffer) -> Vec<u8> {
    let encoder = ctx().device().create_command_encoder(&Default::default());
    bytemuck::cast_slice(&common::read_back(buffer, encoder)).to_vec()
}

/// `got` (a whole buffer) against `expected`: bit for bit where the reference left an
/// element as it was (`before`), within the contract elsewhere. With cos and sin rounded to
/// bf16 (`bf16_cos_sin`), a value within the kernel's 1.5e-7 of a bf16 midpoint may round
/// the other way than the reference's: such elements may be off by a bf16 unit of the pair
/// (at most `2 max |x| / 256`), two in a thousand of them at most (a cos or a sin that
/// flips moves both elements of its pair), and two in any call.
fn check(
    before: &[f64],
    got: &[f64],
    expected: &[f64],
    dtype: Dtype,
    bf16_cos_sin: bool,
) -> Result<(), String> {
    let flip = match bf16_cos_sin {
        true => 2.0 * before.iter().fold(0.0f64, |m, v| m.max(v.abs())) / 256.0,
        false => 0.0,
    };
    let (mut flipped, mut rotated) = (0usize, 0usize);
    for (i, ((&b, &g), &e)) in before.iter().zip(got).zip(expected).enumerate() {
        let ok = if e.to_bits() == b.to_bits() {
            g.to_bits() == b.to_bits()
        } else {
            let tol = match dtype {
                Dtype::BF16 => e.abs() / 128.0 + 2e-6,
                _ => TOL * e.abs().max(1.0),
            };
            rotated += 1;
            let within = (g - e).abs() <= tol;
            flipped += usize::from(!within);
            within || (g - e).abs() <= tol + flip
        };
        if !ok {
            return Err(format!("element {i}: got {g}, expected {e} (was {b})"));
        }
    }
    if flipped * 500 > rotated.max(1000) {
        return Err(format!("{flipped} of {rotated} elements a bf16 unit off"));
    }
    Ok(())
}

/// A fixed seed by default, so that a run (CI's) can be repeated exactly;
/// `POSENC_RANDOM_SEED` draws other calls.
fn seed() -> u64 {
    std::env::var("POSENC_RANDOM_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_2026)
}

/// `cases` calls from the fixed seed, failures kept in the regressions file.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        max_shrink_iters: 2000,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/random_calls.proptest-regressions",
        ))),
        rng_seed: RngSeed::Fixed(seed()),
        ..ProptestConfig::default()
    }
}

fn calls() -> u32 {
    std::env::var("POSENC_RANDOM_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

proptest! {
    #![proptest_config(config(calls()))]

    #[test]
    fn random_calls_are_errors_or_match_the_reference(case in case_strategy()) {
        if let Err(e) = run(&case) {
            prop_assert!(false, "{case:?}: {e}");
        }
        let n = CALLS.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(1000) {
            eprintln!(
                "{n} calls, {} compared with the reference ({} pooled, {} with a table of \
                 the other layout)",
                CHECKED.load(Ordering::Relaxed),
                POOLED.load(Ordering::Relaxed),
                TABLED.load(Ordering::Relaxed)
            );
        }
    }
}

proptest! {
    #![proptest_config(config(calls() / 10))]

    #[test]
    fn random_grid_calls_are_errors_or_match_the_reference(case in sinusoidal::grid_strategy()) {
        match sinusoidal::run_grid(&case) {
            Ok(checked) => tally("grid calls", &GRIDS, checked, 200),
            Err(e) => prop_assert!(false, "{case:?}: {e}"),
        }
    }
}

proptest! {
    #![proptest_config(config(calls() / 10))]

    #[test]
    fn random_position_grids_are_errors_or_the_hosts_bits(
        case in position_grids::grid_strategy()
    ) {
        match position_grids::run_grid(&case) {
            Ok(checked) => tally("position grids", &POSITION_GRIDS, checked, 200),
            Err(e) => prop_assert!(false, "{case:?}: {e}"),
        }
    }
}

#[cfg(feature = "hf-config")]
proptest! {
    #![proptest_config(config(calls() / 20))]

    #[test]
    fn random_checkpoint_files_are_read_or_refused(
        cut in 0usize..20_000, at in 0usize..20_000, byte in any::<u8>()
    ) {
        if let Err(e) = position_grids::run_checkpoint(cut, at, byte) {
            prop_assert!(false, "cut {cut}, byte {at} = {byte}: {e}");
        }
    }
}

proptest! {
    #![proptest_config(config(calls() / 5))]

    #[test]
    fn views_of_one_buffer_are_errors_or_match_the_reference(case in one_buffer_strategy()) {
        if let Err(e) = run_one_buffer(&case) {
            prop_assert!(false, "{case:?}: {e}");
        }
    }
}

proptest! {
    #![proptest_config(config(calls() / 8))]

    #[test]
    fn random_fused_calls_are_errors_or_match_the_reference(case in fused::fused_strategy()) {
        match fused::run_fused(&case) {
            Ok(checked) => tally("fused calls", &FUSED, checked, 500),
            Err(e) => prop_assert!(false, "{case:?}: {e}"),
        }
    }
}

proptest! {
    #![proptest_config(config(calls() / 10))]

    #[test]
    fn random_angle_words_are_errors_or_the_references(case in export::words_strategy()) {
        match export::run_words(&case) {
            Ok(checked) => tally("angle-word calls", &WORDS, checked, 500),
            Err(e) => prop_assert!(false, "{case:?}: {e}"),
        }
    }
}

proptest! {
    #![proptest_config(config(calls() / 50))]

    #[test]
    fn random_exported_bindings_are_errors_or_compile(case in export::export_strategy()) {
        match export::run_export(&case) {
            Ok(checked) => tally("exported bindings", &EXPORTS, checked, 100),
            Err(e) => prop_assert!(false, "{case:?}: {e}"),
        }
    }
}
