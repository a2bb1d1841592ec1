//! The strategies that draw the RoPE and sinusoidal calls: layouts (valid or not), scalings,
//! entry points, dtypes, specs and positions.

use super::common;
use super::{Case, Entry, Pos, sinusoidal};

use proptest::prelude::*;
use wgpu_posenc::Dims;
use wgpu_posenc::{
    AxisFrequencies, Dtype, FrequencyUnit, Layout, MRopeOrder, OutputOrder, PairLayout, RopeSpec,
    Scaling, SinusoidalLayout,
};

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
            // A view with heads and tokens swapped (NeuCodec's heads at their index).
            0 if offset % 5 == 0 => Layout::bhsd(shape).heads_as_tokens(),
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

pub fn case_strategy() -> impl Strategy<Value = Case> {
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
