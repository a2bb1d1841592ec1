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

mod common;
#[path = "random_calls/configs.rs"]
mod configs;
#[path = "random_calls/export.rs"]
mod export;
#[path = "random_calls/fused.rs"]
mod fused;
#[path = "random_calls/position_grids.rs"]
mod position_grids;
#[path = "random_calls/sinusoidal.rs"]
mod sinusoidal;

use common::{ctx, poison, u32_buffer, widen};
use std::sync::atomic::{AtomicU32, Ordering};

use half::bf16;
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, RngSeed};
use wgpu_posenc::Dims;
use wgpu_posenc::{
    ArrayView, AxisFrequencies, CosSinCache, Dtype, FrequencyUnit, HostPositions, Layout,
    MRopeOrder, OutputOrder, PairLayout, Positions, RopeCall, RopeSpec, Scaling, SinusoidalLayout,
    SinusoidalSpec, TensorView, reference,
};

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

fn layout_strategy() -> impl Strategy<Value = Layout> {
    let dims = (
        0u64..3,
        0u64..4,
        0u64..24,
        prop_oneof![
            8 => prop::sample::select(vec![2u64, 4, 6, 8, 10, 16, 24, 32, 64, 96, 128]),
            1 => prop::sample::select(vec![0u64, 3, 7]),
        ],
    );
    (dims, 0u8..4, 0u64..40, any::<[u16; 3]>()).prop_map(|((b, h, s, d), kind, offset, st)| {
        let shape = [b, h, s, d];
        match kind {
            0 => Layout::bhsd(shape).with_offset(offset),
            1 => Layout::bshd(Dims::from_logical(shape)).with_offset(offset),
            // Any strides: some overlap (an error), some leave gaps.
            2 => Layout::strided(shape, st.map(|x| u64::from(x % 512))).with_offset(offset),
            // Large strides on few elements.
            _ => Layout::strided(shape, [1 << 16, d.max(1) * 3, d.max(1) * 40]),
        }
    })
}

fn scaling_strategy() -> impl Strategy<Value = Scaling> {
    prop_oneof![
        4 => Just(Scaling::Default),
        1 => (0.5f64..8.0).prop_map(|factor| Scaling::Linear { factor }),
        1 => Just(Scaling::llama3()),
        1 => (1.0f64..16.0).prop_map(|f| Scaling::yarn(f, 64)),
        1 => (1.0f64..4.0).prop_map(|factor| Scaling::DynamicNtk {
            factor,
            original_max_position_embeddings: 16,
        }),
    ]
}

fn case_strategy() -> impl Strategy<Value = Case> {
    let entry = prop::sample::select(vec![
        Entry::Rope,
        Entry::RopeQk,
        Entry::RopeOut,
        Entry::RopeCache,
        Entry::RopeHost,
        Entry::SinTable,
        Entry::SinAdd,
        Entry::SinTableHost,
        Entry::SinAddHost,
    ]);
    let spec = (
        any::<bool>(),
        prop_oneof![6 => Just(None), 1 => (0u64..40).prop_map(Some)],
        prop_oneof![8 => prop::sample::select(vec![10_000.0f64, 500_000.0, 1e6, 2.0]),
                    1 => prop::sample::select(vec![0.5f64, -1.0, f64::NAN])],
        any::<bool>(),
        scaling_strategy(),
        prop_oneof![6 => Just(None), 1 => (0u64..5000).prop_map(Some)],
        prop_oneof![5 => Just(OutputOrder::Pairs), 1 => Just(OutputOrder::PairHalves)],
        // Frequencies in revolutions a position (DINOv3's) now and then.
        prop_oneof![4 => Just(FrequencyUnit::Radians), 1 => Just(FrequencyUnit::Revolutions)],
        // Lanes before the rotated ones (LTX's padding), odd ones too, now and then.
        prop_oneof![6 => Just(0u64), 1 => 1u64..9],
        // Half-split pairs in blocks (Gemma 4's), zero blocks and uneven ones too.
        prop_oneof![12 => Just(1u64), 1 => 0u64..5],
        // Cos and sin rounded to bf16 (HF's in a bf16 model) now and then.
        prop_oneof![9 => Just(false), 1 => Just(true)],
        // A cos/sin table laid out for either pair layout (ERNIE-Image's, V-JEPA 2's).
        prop_oneof![8 => Just(None), 1 => Just(Some(PairLayout::HalfSplit)),
                    1 => Just(Some(PairLayout::Interleaved))],
    )
        .prop_map(
            |(
                interleaved,
                rotary_dim,
                base,
                inverse,
                scaling,
                seq_len,
                order,
                unit,
                lead,
                blocks,
                bf16_cos_sin,
                table,
            )| {
                let mut spec = RopeSpec::new()
                    .pair_layout(if interleaved {
                        PairLayout::Interleaved
                    } else {
                        PairLayout::HalfSplit
                    })
                    .base(base)
                    .inverse(inverse)
                    .scaling(scaling)
                    .output_order(order)
                    .frequency_unit(unit)
                    .leading_lanes(lead)
                    .pair_blocks(blocks)
                    .cos_sin_bf16(bf16_cos_sin);
                spec.rotary_dim = rotary_dim;
                spec.scaling_seq_len = seq_len;
                spec.table_layout = table;
                spec
            },
        );
    (
        entry,
        layout_strategy(),
        prop_oneof![4 => Just(Dtype::F32), 1 => Just(Dtype::BF16)],
        spec,
        0u8..8,
        0u64..4,
        prop_oneof![Just(1.0f32), Just(0.5f32), Just(8.0f32), Just(f32::NAN)],
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(
            |(entry, layout, dtype, mut spec, pos_kind, k_heads, scale, concat, seed)| {
                let [b, _, s, _] = layout.shape;
                let mut rng = common::Rng::new(seed);
                let mut ids = |n: u64, big: bool| -> Vec<u32> {
                    (0..n)
                        .map(|_| {
                            if big {
                                rng.next_u64() as u32
                            } else {
                                rng.range(0, 70_000) as u32
                            }
                        })
                        .collect()
                };
                let positions = match pos_kind {
                    0 => Pos::Start((seed >> 8) as u32 % 100_000),
                    1 => Pos::Start(u32::MAX - (seed as u32 % 30)),
                    2 => Pos::BatchStarts(ids(b + (seed % 2), false)),
                    3 => Pos::Ids(ids((b * s + seed % 3).saturating_sub(1), seed % 5 == 0)),
                    4 => {
                        // cu_seqlens over the s tokens of one batch row.
                        let mut cu = vec![0u32];
                        let mut at = 0u64;
                        while at < s {
                            at = (at + 1 + seed % 7).min(s);
                            cu.push(at as u32);
                        }
                        if cu.len() == 1 {
                            cu.push(0);
                        }
                        let offsets = (seed % 2 == 0).then(|| ids(cu.len() as u64 - 1, false));
                        Pos::Varlen(cu, offsets)
                    }
                    6 => {
                        // Bad values only where the host sees them, which must refuse them.
                        let host = matches!(entry, Entry::SinAddHost | Entry::SinTableHost);
                        let n = (b * s + seed % 3).saturating_sub(1);
                        Pos::Float(sinusoidal::float_positions(n, seed, host && seed % 4 == 0))
                    }
                    _ => {
                        // M-RoPE sections covering the rotary pairs when they can; one
                        // frequency list per axis with contiguous sections now and then.
                        let lanes = layout.shape[3].saturating_sub(spec.leading_lanes);
                        let pairs = spec.rotary_dim.unwrap_or(lanes) / 2;
                        let t = pairs / 3;
                        let order = [
                            MRopeOrder::Chunks,
                            MRopeOrder::Interleaved,
                            MRopeOrder::HwThenT,
                            MRopeOrder::WhThenT,
                            MRopeOrder::WhtChunks,
                        ][(seed % 5) as usize];
                        spec = match seed % 10 {
                            // Per-axis lists in any order.
                            0 => {
                                let mut spec = spec.mrope_order([pairs - 2 * t, t, t], order);
                                if let Some(m) = spec.mrope.as_mut() {
                                    m.frequencies = AxisFrequencies::PerAxis;
                                }
                                spec
                            }
                            // A fourth axis (FLUX.2's), now and then given three planes only.
                            5 => spec.axes_rope4([pairs.saturating_sub(3 * t), t, t, t]),
                            // One list dealt to the axes (Pixtral's).
                            9 => spec.axes_dealt([pairs - 2 * t, t, t]),
                            // Lists rising from pi/2 (LTX's), in any order.
                            3 => spec.axes_rising([pairs - 2 * t, t, t], order),
                            // A learned table (Mochi's), of one head or the tensor's.
                            6 if pairs <= 4096 => {
                                let heads = if seed % 4 == 0 {
                                    layout.shape[1].min(64)
                                } else {
                                    1
                                };
                                let mut draw = common::Rng::new(seed ^ 0x7ab1e);
                                let values = (0..3 * heads * pairs)
                                    .map(|i| {
                                        let u = draw.next_u64() as f64 / u64::MAX as f64 - 0.5;
                                        if i % 5 == 0 { 60.0 * u } else { 2.0 * u }
                                    })
                                    .collect();
                                spec.learned(wgpu_posenc::LearnedFrequencies::new(3, heads, values))
                            }
                            _ => spec.mrope_order([pairs - 2 * t, t, t], order),
                        };
                        // A base per axis (Cosmos') with per-axis lists, now and then.
                        let per_axis = spec.mrope.is_some_and(|m| m.frequencies.per_axis());
                        if per_axis && seed % 3 == 1 {
                            let base = spec.base;
                            spec = spec.axis_bases([base * 2.0, base, 500.0, 1e6]);
                        }
                        let four = spec.mrope.is_some_and(|m| m.fourth > 0);
                        let planes = if four && seed % 7 != 0 { 4 } else { 3 };
                        // Pooled sets of axes (Helios' history tokens), bad pools too.
                        let pool = [1, 1, 1, 1, 1, 2, 4, 8, 3, 0][(seed >> 24) as usize % 10];
                        spec = spec.pooled(pool);
                        let planes = planes * u64::from(pool.max(1));
                        if pos_kind == 7 {
                            // f32 axes; bad values only where the host sees them.
                            let host = matches!(entry, Entry::RopeHost);
                            let n = planes * b * s;
                            let v = sinusoidal::float_positions(n, seed, host && seed % 4 == 1);
                            Pos::FloatAxes(v)
                        } else {
                            Pos::Axes(ids(planes * b * s, false))
                        }
                    }
                };
                // A pool without position axes, which must be refused.
                let axes = matches!(positions, Pos::Axes(_) | Pos::FloatAxes(_));
                if !axes && seed % 19 == 0 {
                    spec = spec.pooled(4);
                }
                Case {
                    entry,
                    layout,
                    dtype,
                    spec,
                    positions,
                    k_heads,
                    scale,
                    sin_layout: if concat {
                        SinusoidalLayout::Concatenated
                    } else {
                        SinusoidalLayout::Interleaved
                    },
                    sin_form: (seed >> 40) as u8 % 5,
                    seed,
                }
            },
        )
}

/// HF's pair-halves order is written only out of place, over interleaved pairs, and leading
/// lanes only in place: any other RoPE call with them that ran is a failure.
fn refuses_order(case: &Case, ran: bool) -> Result<(), String> {
    let rope = matches!(
        case.entry,
        Entry::Rope | Entry::RopeQk | Entry::RopeOut | Entry::RopeCache | Entry::RopeHost
    );
    let allowed =
        matches!(case.entry, Entry::RopeOut) && case.spec.pair_layout == PairLayout::Interleaved;
    if ran && rope && case.spec.output_order == OutputOrder::PairHalves && !allowed {
        return Err(format!("{:?} ran in PairHalves order", case.entry));
    }
    // Leading lanes rotate in place only; pair blocks are half-split pairs'.
    if ran && matches!(case.entry, Entry::RopeOut) && case.spec.leading_lanes > 0 {
        return Err("an out-of-place call ran after leading lanes".into());
    }
    // Interleaved pairs in blocks only under a table of the other layout (V-JEPA 2's).
    let blocks = case.spec.pair_blocks;
    let split = case.spec.pair_layout == PairLayout::HalfSplit || case.spec.lane_angles();
    if ran && rope && (blocks == 0 || (blocks > 1 && !split)) {
        return Err(format!("{:?} ran with {blocks} pair blocks", case.entry));
    }
    // A table of the other layout: forward, in the pairs' order, from the spec's
    // frequencies, not through a cos/sin cache.
    let tabled_ok = !case.spec.lane_angles()
        || (case.spec.learned.is_none()
            && !case.spec.inverse
            && case.spec.output_order == OutputOrder::Pairs
            && !matches!(case.entry, Entry::RopeCache));
    if ran && rope && !tabled_ok {
        return Err(format!(
            "{:?} ran with a table of the other layout",
            case.entry
        ));
    }
    // Pools of 1, 2, 4 or 8 sets, over position axes, without a learned table or a cache.
    let pool = case.spec.pool;
    let pooled_ok = pool == 1
        || ([2, 4, 8].contains(&pool)
            && case.spec.mrope.is_some()
            && case.spec.learned.is_none()
            && !matches!(case.entry, Entry::RopeCache));
    if ran && rope && !pooled_ok {
        return Err(format!("{:?} ran with a pool of {pool}", case.entry));
    }
    Ok(())
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

/// GPU buffers of a case's positions (an empty array is one word, viewed from its end).
fn gpu_positions(p: &Pos) -> Positions<(wgpu::Buffer, u64)> {
    p.host().map(|v| {
        if v.is_empty() {
            (u32_buffer(&[0]), 4)
        } else {
            (u32_buffer(v), 0)
        }
    })
}

/// Runs one case; `Ok` when it returned an error or matched the reference.
fn run(case: &Case) -> Result<(), String> {
    let checked = run_case(case)?;
    if checked {
        CHECKED.fetch_add(1, Ordering::Relaxed);
        if case.spec.pool > 1 {
            POOLED.fetch_add(1, Ordering::Relaxed);
        }
        if case.spec.lane_angles() {
            TABLED.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(())
}

/// `Ok(true)` when the call ran and matched the reference, `Ok(false)` when it returned an
/// error (or could not be set up on the host).
fn run_case(case: &Case) -> Result<bool, String> {
    let layout = case.layout;
    let Some(input) = data(&layout, 9, case.seed) else {
        return Ok(false); // too large to hold on the host; the shape checks run elsewhere
    };
    let dtype = case.dtype;
    let n = input.len();
    let bytes = to_bytes(&input, dtype);
    let before = values(&bytes, dtype, n);
    let sin_spec = sinusoidal::spec(
        layout.shape[3],
        case.sin_layout,
        case.spec.base,
        case.sin_form,
        case.seed,
    );
    let host = case.positions.host();
    match case.entry {
        Entry::RopeHost | Entry::SinAddHost | Entry::SinTableHost => {
            // Host paths are f32.
            let mut out = input.clone();
            let result = match case.entry {
                Entry::RopeHost => ctx().rope_host(&case.spec, layout, &mut out, host),
                Entry::SinAddHost => {
                    ctx().sinusoidal_add_host(&sin_spec, layout, &mut out, host, case.scale)
                }
                _ => {
                    let Pos::Start(start) = case.positions else {
                        return table_at_host(&sin_spec, &layout, host);
                    };
                    let s = layout.shape[2];
                    return match ctx().sinusoidal_table_host(&sin_spec, s, start) {
                        Err(_) => Ok(false),
                        Ok(table) => {
                            let expected = reference::sinusoidal_table(&sin_spec, s, start);
                            check(
                                &vec![f64::NAN; table.len()],
                                &widen(&table),
                                &expected,
                                Dtype::F32,
                                false,
                            )
                            .map(|()| true)
                        }
                    };
                }
            };
            refuses_order(case, result.is_ok())?;
            if result.is_err() {
                if out
                    .iter()
                    .zip(&input)
                    .any(|(a, b)| a.to_bits() != b.to_bits())
                {
                    return Err("an error left the data changed".into());
                }
                return Ok(false);
            }
            let mut expected = widen(&input);
            match case.entry {
                Entry::RopeHost => reference::rope(&case.spec, &layout, &mut expected, host),
                _ => reference::sinusoidal_add(
                    &sin_spec,
                    &layout,
                    &mut expected,
                    host,
                    f64::from(case.scale),
                ),
            }
            check(
                &widen(&input),
                &widen(&out),
                &expected,
                Dtype::F32,
                case.spec.cos_sin_bf16,
            )
            .map(|()| true)
        }
        _ => {
            let x = buffer(&bytes);
            let view = TensorView::new(&x, layout).with_dtype(dtype);
            let pos_bufs = gpu_positions(&case.positions);
            let pos = pos_bufs.as_ref().map(|(b, at)| ArrayView::at(b, *at));
            let mut encoder = ctx().device().create_command_encoder(&Default::default());
            // A second tensor (K, or the output) with its own guard.
            let second_layout = match case.entry {
                Entry::RopeQk => {
                    let [b, _, s, d] = layout.shape;
                    Layout::bshd(Dims {
                        batch: b,
                        heads: case.k_heads,
                        seq: s,
                        head_dim: d,
                    })
                }
                _ => Layout::bhsd(layout.shape).with_offset(3),
            };
            let second = data(&second_layout, 5, case.seed ^ 1);
            let Some(second) = second else {
                return Ok(false);
            };
            let second_bytes = to_bytes(&second, dtype);
            let y = buffer(&second_bytes);
            let y_view = TensorView::new(&y, second_layout).with_dtype(dtype);
            let table = cache_table(&layout, &case.spec);
            let cache_buf = buffer(bytemuck::cast_slice(&table.0));
            let flag = buffer(&[0u8; 16]);
            let result = match case.entry {
                Entry::Rope => ctx().encode_rope(&mut encoder, &case.spec, &view, pos),
                Entry::RopeQk => {
                    ctx().encode_rope_qk(&mut encoder, &case.spec, &view, &y_view, pos)
                }
                Entry::RopeOut => ctx().encode_rope_call(
                    &mut encoder,
                    &case.spec,
                    &RopeCall::new(view, pos).with_output(y_view),
                ),
                Entry::RopeCache => ctx().encode_rope_call(
                    &mut encoder,
                    &case.spec,
                    &RopeCall::new(view, pos).with_cache(
                        CosSinCache::vllm(&cache_buf, table.1, table.2)
                            .with_overflow_flag(ArrayView::new(&flag)),
                    ),
                ),
                Entry::SinTable => {
                    ctx().encode_sinusoidal_table_at(&mut encoder, &sin_spec, &view, pos)
                }
                _ => ctx().encode_sinusoidal_add(&mut encoder, &sin_spec, &view, pos, case.scale),
            };
            refuses_order(case, result.is_ok())?;
            if result.is_err() {
                return Ok(false); // nothing was submitted
            }
            ctx().queue().submit([encoder.finish()]);
            let got_x = values(&read(&x), dtype, n);
            let got_y = values(&read(&y), dtype, second.len());
            let before_y = values(&second_bytes, dtype, second.len());
            let mut want_x = before.clone();
            let mut want_y = before_y.clone();
            match case.entry {
                Entry::Rope => reference::rope(&case.spec, &layout, &mut want_x, host),
                Entry::RopeQk => {
                    reference::rope(&case.spec, &layout, &mut want_x, host);
                    reference::rope(&case.spec, &second_layout, &mut want_y, host);
                }
                Entry::RopeOut => reference::rope_out(
                    &case.spec,
                    &layout,
                    &before,
                    &second_layout,
                    &mut want_y,
                    host,
                    None,
                ),
                Entry::RopeCache => {
                    if read(&flag)[0] != 0 {
                        return Ok(false); // positions past the cache: clamped and flagged
                    }
                    let cache = reference::HostCache {
                        values: &table.0,
                        max_pos: table.1,
                        row_stride: table.2,
                        cos_offset: 0,
                        sin_offset: table.2 / 2,
                    };
                    let src = want_x.clone();
                    reference::rope_out(
                        &case.spec,
                        &layout,
                        &src,
                        &layout,
                        &mut want_x,
                        host,
                        Some(&cache),
                    );
                }
                Entry::SinTable => {
                    reference::sinusoidal_table_at(&sin_spec, &layout, &mut want_x, host);
                }
                _ => reference::sinusoidal_add(
                    &sin_spec,
                    &layout,
                    &mut want_x,
                    host,
                    f64::from(case.scale),
                ),
            }
            let bf16_cos_sin = case.spec.cos_sin_bf16;
            check(&before, &got_x, &want_x, dtype, bf16_cos_sin)?;
            check(&before_y, &got_y, &want_y, dtype, bf16_cos_sin).map(|()| true)
        }
    }
}

/// The table at any host positions in a new tensor of `layout` (zeros outside its rows).
fn table_at_host(
    spec: &SinusoidalSpec,
    layout: &Layout,
    host: HostPositions<'_>,
) -> Result<bool, String> {
    match ctx().sinusoidal_table_at_host(spec, *layout, host) {
        Err(_) => Ok(false),
        Ok(table) => {
            let zeros = vec![0.0; table.len()];
            let mut expected = zeros.clone();
            reference::sinusoidal_table_at(spec, layout, &mut expected, host);
            check(&zeros, &widen(&table), &expected, Dtype::F32, false).map(|()| true)
        }
    }
}

/// A vLLM-style cache `[64, r]` of cos then sin for the spec's rotary pairs.
fn cache_table(layout: &Layout, spec: &RopeSpec) -> (Vec<f32>, u64, u64) {
    let r = spec.rotary_dim.unwrap_or(layout.shape[3]).clamp(2, 256) & !1;
    let max_pos = 64u64;
    let mut values = vec![0f32; (max_pos * r) as usize];
    for p in 0..max_pos {
        for (j, f) in reference::inv_freq(r, 10_000.0).iter().enumerate() {
            let (s, c) = reference::sincos(p as u32, *f);
            values[(p * r) as usize + j] = c as f32;
            values[(p * r + r / 2) as usize + j] = s as f32;
        }
    }
    (values, max_pos, r)
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

/// Q and K, or source and output, in one buffer: random shapes and a random offset of the
/// second view, so that some share elements (an error), some share only aligned binding
/// windows (one binding for both), and some are far apart (two bindings).
#[derive(Clone, Debug)]
struct OneBuffer {
    qk: bool,
    layout: Layout,
    k_heads: u64,
    shift: u64,
    interleaved: bool,
    start: u32,
    seed: u64,
}

fn one_buffer_strategy() -> impl Strategy<Value = OneBuffer> {
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

fn run_one_buffer(case: &OneBuffer) -> Result<(), String> {
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
