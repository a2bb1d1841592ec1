//! Random calls of `RopeSpec::angle_words` (any spec, any head width up to `u64::MAX`) and
//! of the WGSL export helpers (`wgsl::rope_functions_for_device`, `with_functions` on kernels
//! with and without directives). Angle words that are returned are `round(f / 2π · 2^64)`
//! of the reference's frequencies, one per pair, with the reference's attention factor and
//! M-RoPE axes; a spec the prepared `Rope` accepts has angle words too. Exported text
//! that is returned compiles (naga) beside a kernel that declares the crate's internal names.

use proptest::prelude::*;
use wgpu_posenc::{
    AxisFrequencies, MRope, MRopeOrder, PairLayout, RopeSpec, Scaling, reference, wgsl,
};

use super::common::ctx;

#[derive(Clone, Debug)]
pub struct WordsCase {
    spec: RopeSpec,
    head_dim: u64,
    seq_len: u64,
}

pub fn words_strategy() -> impl Strategy<Value = WordsCase> {
    let head_dim = prop_oneof![
        6 => prop::sample::select(vec![2u64, 4, 6, 8, 64, 96, 128, 256, 512]),
        1 => prop::sample::select(vec![
            0u64,
            3,
            RopeSpec::MAX_HEAD_DIM,
            RopeSpec::MAX_HEAD_DIM + 2,
            (1 << 32) + 2,
            1 << 33,
            1 << 40,
            1 << 62,
            u64::MAX - 1,
        ]),
    ];
    let scaling = prop_oneof![
        3 => Just(Scaling::Default),
        1 => (0.1f64..8.0).prop_map(|factor| Scaling::Linear { factor }),
        1 => Just(Scaling::llama3()),
        1 => (1.0f64..32.0).prop_map(|f| Scaling::yarn(f, 4096)),
        1 => (1.0f64..4.0).prop_map(|factor| Scaling::DynamicNtk {
            factor,
            original_max_position_embeddings: 2048,
        }),
        1 => Just(Scaling::Linear { factor: f64::NAN }),
    ];
    (
        head_dim,
        prop_oneof![6 => Just(None), 1 => (0u64..600).prop_map(Some)],
        prop_oneof![6 => prop::sample::select(vec![10_000.0f64, 5e5, 1e6]),
                    1 => prop::sample::select(vec![1.0f64, 0.5, -2.0, f64::NAN, f64::INFINITY, 1e300])],
        any::<bool>(),
        any::<bool>(),
        scaling,
        0u8..7,
        prop_oneof![Just(0u64), 1u64..100_000, Just(u64::MAX)],
        any::<u64>(),
    )
        .prop_map(
            |(head_dim, rotary_dim, base, interleaved, inverse, scaling, mrope, seq_len, seed)| {
                let mut spec = RopeSpec::new()
                    .base(base)
                    .inverse(inverse)
                    .scaling(scaling)
                    .pair_layout(if interleaved {
                        PairLayout::Interleaved
                    } else {
                        PairLayout::HalfSplit
                    });
                spec.rotary_dim = rotary_dim;
                if mrope > 1 {
                    let pairs = rotary_dim.unwrap_or(head_dim) / 2;
                    let t = pairs / 3 + seed % 2;
                    let per_axis = mrope == 2 && seed % 3 == 0;
                    let w = pairs.saturating_sub(t + pairs / 3);
                    // Per-axis lists also over a fourth axis (FLUX.2's), half the width's.
                    let fourth = if per_axis && seed % 5 == 0 { w / 2 } else { 0 };
                    spec.mrope = Some(MRope {
                        section: [t, pairs / 3, w - fourth],
                        fourth,
                        order: [
                            MRopeOrder::Chunks,
                            MRopeOrder::Interleaved,
                            MRopeOrder::HwThenT,
                            MRopeOrder::WhThenT,
                            MRopeOrder::WhtChunks,
                        ][usize::from(mrope - 2)],
                        // Contiguous sections also with a frequency list per axis.
                        frequencies: if per_axis {
                            AxisFrequencies::PerAxis
                        } else if mrope == 2 && seed % 3 == 1 {
                            // One list dealt to the axes (Pixtral's).
                            AxisFrequencies::Dealt
                        } else {
                            AxisFrequencies::Shared
                        },
                    });
                }
                WordsCase {
                    spec,
                    head_dim,
                    seq_len,
                }
            },
        )
}

/// `Ok(true)` when words were returned and match the reference.
pub fn run_words(c: &WordsCase) -> Result<bool, String> {
    let prepared = ctx().rope(&c.spec, c.head_dim);
    let words = match c.spec.angle_words(c.head_dim, c.seq_len) {
        Err(e) => {
            return match prepared {
                // Refused for what only a device limits (the frequency binding) is fine.
                Ok(_) => Err(format!("angle_words refused ({e}), PosEnc::rope accepted")),
                Err(_) => Ok(false),
            };
        }
        Ok(w) => w,
    };
    let r = c.spec.rotary_dim.unwrap_or(c.head_dim);
    let seq_len = c.spec.scaling_seq_len.unwrap_or(c.seq_len);
    let (freqs, factor) =
        reference::frequencies(&c.spec, r, seq_len).map_err(|e| format!("reference: {e}"))?;
    if words.words.len() != freqs.len() || words.axes.len() != freqs.len() {
        return Err(format!(
            "{} words for {} pairs",
            words.words.len(),
            freqs.len()
        ));
    }
    if (f64::from(words.attention_factor) - factor).abs() > 1e-6 * factor.abs() {
        return Err(format!(
            "attention factor {} vs {factor}",
            words.attention_factor
        ));
    }
    let axes = match c.spec.mrope {
        Some(m) => m.axes(r / 2).map_err(|e| format!("sections: {e}"))?,
        None => vec![0; (r / 2) as usize],
    };
    if words.axes != axes {
        return Err(format!("axes {:?} vs {axes:?}", words.axes));
    }
    for (j, (w, &(f, f_lo))) in words.words.iter().zip(&freqs).enumerate() {
        let fixed = (u64::from(w[1]) << 32) | u64::from(w[0]);
        let fixed = if c.spec.inverse {
            fixed.wrapping_neg()
        } else {
            fixed
        };
        // Revolutions per position, from the words and from the reference's frequency.
        let got = fixed as f64 / 2f64.powi(64);
        let want = (f + f_lo) / std::f64::consts::TAU;
        let want = want - want.floor();
        let diff = (got - want).abs().min(1.0 - (got - want).abs());
        // The f64 fraction of a large f / 2π keeps fewer bits than the words do.
        if diff > 1e-15 + 4.0 * f64::EPSILON * (f / std::f64::consts::TAU).abs() {
            return Err(format!("pair {j}: {got} revolutions vs {want}"));
        }
    }
    Ok(true)
}

/// A user kernel that declares the names the crate's own shaders use, of every kind, with
/// or without directives in front.
fn user_kernel(directives: bool) -> String {
    let mut k = String::new();
    if directives {
        k.push_str("enable f16;\n// comment\ndiagnostic(off, derivative_uniformity);\n");
    }
    k.push_str(
        "const LANES: u32 = 4u;\noverride UV: u32 = 1u;\nalias FV = f32;\n\
         struct SinCos { s: f32 }\nfn turns(x: u32) -> u32 { return x + LANES + UV; }\n\
         @compute @workgroup_size(1) fn main() {}\n",
    );
    k
}

#[derive(Clone, Debug)]
pub struct ExportCase {
    group: u32,
    binding: u32,
    directives: bool,
}

pub fn export_strategy() -> impl Strategy<Value = ExportCase> {
    let index = prop_oneof![4 => 0u32..8, 1 => 0u32..2000, 1 => Just(u32::MAX)];
    (index.clone(), index, any::<bool>()).prop_map(|(group, binding, directives)| ExportCase {
        group,
        binding,
        directives,
    })
}

pub fn run_export(c: &ExportCase) -> Result<bool, String> {
    let device = ctx().device();
    let limits = device.limits();
    let fits = c.group < limits.max_bind_groups && c.binding < limits.max_bindings_per_bind_group;
    let functions = match wgsl::rope_functions_for_device(device, c.group, c.binding) {
        Ok(f) if fits => f,
        Ok(_) => return Err("a binding past the device's limits was accepted".into()),
        Err(_) if !fits => return Ok(false),
        Err(e) => return Err(format!("refused a binding within the limits: {e}")),
    };
    let at = format!("@group({}) @binding({})", c.group, c.binding);
    if !functions.contains(&at) {
        return Err(format!("no {at} in the text"));
    }
    let source = wgsl::with_functions(&functions, &user_kernel(c.directives));
    let module = naga::front::wgsl::parse_str(&source).map_err(|e| e.emit_to_string(&source))?;
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|e| e.emit_to_string(&source))?;
    Ok(true)
}
