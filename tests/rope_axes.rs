//! RoPE over three position axes with a frequency list per axis
//! ([`RopeSpec::axes_rope`]), against diffusers' FLUX.1, Wan 2.1, HunyuanVideo and Qwen-Image
//! (centered, negative positions as f32 axes) rotary modules
//! (`tests/data/diffusers/rope_axes.py`: their cos/sin tables applied by diffusers'
//! `apply_rotary_emb` at the pipelines' own positions), on the whole sequence in a poisoned
//! buffer with guards, and against the f64 reference.
#![cfg(not(target_arch = "wasm32"))]

#[cfg(feature = "hf-config")]
#[path = "rope_axes/bf16.rs"]
mod bf16;
#[path = "rope_axes/blocks.rs"]
mod blocks;
mod common;
#[cfg(feature = "hf-config")]
#[path = "rope_axes/diffusers.rs"]
mod diffusers;
#[path = "rope_axes/grids.rs"]
mod grids;
#[path = "rope_axes/learned.rs"]
mod learned;
#[path = "rope_axes/pooled.rs"]
mod pooled;
#[path = "rope_axes/rising.rs"]
mod rising;
#[path = "rope_axes/table_layout.rs"]
mod table_layout;
#[path = "rope_axes/timm.rs"]
mod timm;
#[cfg(feature = "hf-config")]
#[path = "rope_axes/vision.rs"]
mod vision;

use common::{
    Rng, assert_matches, ctx, guarded_input, poison, run_on_buffer, test_data, u32_buffer, widen,
};
use serde_json::Value;
use wgpu_posenc::{
    ArrayView, Dims, FrequencyUnit, Layout, MRopeOrder, PairLayout, Positions, RopeSpec,
    TensorView, reference,
};

fn u(v: &Value) -> u64 {
    v.as_u64().expect("integer")
}

/// A golden case's integer list (`rows`, `grid`, ...).
fn indices(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| u(x) as usize)
        .collect()
}

/// Every number of a nested array, in order (`[heads][d]` rows as one row).
fn flat(v: &Value) -> Vec<f64> {
    match v.as_array() {
        Some(a) => a.iter().flat_map(flat).collect(),
        None => vec![v.as_f64().expect("number")],
    }
}

/// Writes a golden case's sampled rows (`sampled[k]`, `row` values each, nested or not)
/// into `x` at rows `first + rows[k]`.
fn put_rows(x: &mut [f32], sampled: &Value, rows: &[usize], first: usize, row: usize) {
    for (k, &r) in rows.iter().enumerate() {
        let at = (first + r) * row;
        for (i, v) in flat(&sampled[k]).into_iter().enumerate() {
            x[at + i] = v as f32;
        }
    }
}

/// The largest difference of `got` (rows `first + rows[k]`) from a golden case's rows.
fn from_rows<T: Copy + Into<f64>>(
    got: &[T],
    sampled: &Value,
    rows: &[usize],
    first: usize,
    row: usize,
) -> f64 {
    let per = |k: usize, r: usize| {
        let at = (first + r) * row;
        flat(&sampled[k])
            .iter()
            .zip(&got[at..at + row])
            .fold(0.0f64, |m, (&w, &g)| m.max((g.into() - w).abs()))
    };
    rows.iter()
        .enumerate()
        .fold(0.0, |m, (k, &r)| m.max(per(k, r)))
}

fn list(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

/// The positions of every token, `[t.. | h.. | w..]` (`Positions::Axes`): FLUX's text ids
/// (zeros) then its image ids `(0, row, column)`; Wan's `(frame, row, column)`.
fn positions(case: &Value) -> Vec<u32> {
    let text = u(&case["text_tokens"]);
    let grid: Vec<u64> = case["grid"]
        .as_array()
        .expect("grid")
        .iter()
        .map(u)
        .collect();
    let [f, h, w] = match grid[..] {
        [h, w] => [1, h, w],
        [f, h, w] => [f, h, w],
        _ => panic!("grid {grid:?}"),
    };
    let n = (text + f * h * w) as usize;
    let mut axes = vec![0u32; 3 * n];
    for i in 0..f * h * w {
        let token = (text + i) as usize;
        axes[token] = (i / (h * w)) as u32;
        axes[n + token] = ((i / w) % h) as u32;
        axes[2 * n + token] = (i % w) as u32;
    }
    axes
}

/// A case's positions: the words the kernel reads, and whether they are f32 bits (Qwen-Image's
/// centered grid, the module's own positions) or u32 (integer grids built here). The sampled
/// tokens' positions are checked against the pipeline's.
fn case_positions(case: &Value, rows: &[usize]) -> (Vec<u32>, bool) {
    let n = u(&case["tokens"]) as usize;
    let float: Option<Vec<f32>> = case
        .get("all_positions")
        .map(|p| list(p).iter().map(|&x| x as f32).collect());
    let ints: Vec<i64> = match &float {
        Some(f) => f.iter().map(|&x| x as i64).collect(),
        None => positions(case).into_iter().map(i64::from).collect(),
    };
    for (k, &r) in rows.iter().enumerate() {
        let want: Vec<i64> = list(&case["positions"][k])
            .iter()
            .map(|&x| x as i64)
            .collect();
        assert_eq!(
            [ints[r], ints[n + r], ints[2 * n + r]],
            want[..],
            "token {r}"
        );
    }
    match float {
        Some(f) => (f.iter().map(|x| x.to_bits()).collect(), true),
        None => (ints.iter().map(|&x| x as u32).collect(), false),
    }
}

/// f32 positions on three axes (`axes`) or one a token.
fn axes_or_1d<A>(words: A, axes: bool) -> Positions<A> {
    if axes {
        Positions::FloatAxes(words)
    } else {
        Positions::Float(words)
    }
}

/// `words` as the positions of a view: f32 axes or u32 axes.
fn axes_of<A>(words: A, float: bool) -> Positions<A> {
    if float {
        Positions::FloatAxes(words)
    } else {
        Positions::Axes(words)
    }
}

/// `q` rotated by `spec` on the GPU, BSHD after 7 poisoned elements and before 7 more, the
/// guards checked.
fn rotate(spec: &RopeSpec, dims: Dims, q: &[f32], words: &[u32], float: bool) -> Vec<f32> {
    rotate_with(spec, Layout::bshd(dims), q, words, |v| axes_of(v, float))
}

/// [`rotate`] with the positions made by `kind` from the words' buffer.
fn rotate_with(
    spec: &RopeSpec,
    layout: Layout,
    q: &[f32],
    words: &[u32],
    kind: impl for<'a> Fn(ArrayView<'a>) -> Positions<ArrayView<'a>>,
) -> Vec<f32> {
    let guard = 7;
    let layout = layout.with_offset(guard as u64);
    let len = q.len();
    let input: Vec<f32> = (0..guard)
        .map(poison)
        .chain(q.iter().copied())
        .chain((0..guard).map(|i| poison(guard + len + i)))
        .collect();
    let ids = u32_buffer(words);
    let out = run_on_buffer(&input, |encoder, buffer| {
        let positions = kind(ArrayView::new(&ids));
        ctx()
            .encode_rope(encoder, spec, &TensorView::new(buffer, layout), positions)
            .expect("encode");
    });
    for i in (0..guard).chain(guard + len..2 * guard + len) {
        assert_eq!(
            out[i].to_bits(),
            poison(i).to_bits(),
            "guard {i} overwritten"
        );
    }
    out[guard..guard + len].to_vec()
}

#[test]
fn diffusion_transformer_rotations_match_diffusers() {
    let data = test_data("diffusers/rope_axes.json");
    for case in data["cases"].as_array().expect("cases") {
        let name = case["name"].as_str().expect("name");
        let (s, heads, d) = (u(&case["tokens"]), u(&case["heads"]), u(&case["head_dim"]));
        let dims: Vec<u64> = case["axes_dims"]
            .as_array()
            .expect("dims")
            .iter()
            .map(u)
            .collect();
        let spec = RopeSpec::new()
            .base(case["theta"].as_f64().expect("theta"))
            .pair_layout(PairLayout::Interleaved)
            .axes_rope([dims[0] / 2, dims[1] / 2, dims[2] / 2]);
        let rows = indices(&case["rows"]);
        let (words, float) = case_positions(case, &rows);
        // Random Q, the sampled rows diffusers' own.
        let row = (heads * d) as usize;
        let mut q = Rng::new(28).values(s as usize * row);
        put_rows(&mut q, &case["q"], &rows, 0, row);
        let shape = Dims {
            batch: 1,
            seq: s,
            heads,
            head_dim: d,
        };
        let got = rotate(&spec, shape, &q, &words, float);
        // Against diffusers at the sampled tokens (f32 cos/sin of f64 angles, f32 products).
        let theirs = from_rows(&got, &case["rotated"], &rows, 0, row);
        // Against the f64 reference over every token.
        let mut x: Vec<f64> = q.iter().map(|&v| f64::from(v)).collect();
        reference::rope(
            &spec,
            &Layout::bshd(shape),
            &mut x,
            axes_of(&words[..], float),
        );
        let ours = got
            .iter()
            .zip(&x)
            .map(|(&a, &b)| (f64::from(a) - b).abs())
            .fold(0.0, f64::max);
        // HunyuanVideo and Qwen-Image build their angles in f32: off by up to
        // `max_own_error`, past the contract; the others within it, and no slack.
        let own = case["max_own_error"].as_f64().expect("own error");
        let slack = if own > 1.5e-7 { own } else { 0.0 };
        assert!(
            theirs <= slack + 4e-7,
            "{name}: {theirs:e} from diffusers ({own:e})"
        );
        assert!(ours <= 4e-7, "{name}: {ours:e} from the reference");
        eprintln!(
            "{name} ({s} tokens, axes {dims:?}): within {theirs:.2e} of diffusers at {} tokens, \
             {ours:.2e} of the f64 reference at all",
            rows.len()
        );
    }
}

/// Per-axis frequency lists take no scaling and contiguous sections only: typed errors.
#[test]
fn per_axis_frequencies_refuse_scalings_and_other_orders() {
    use wgpu_posenc::{AxisFrequencies, Error, MRope, Scaling};
    let scaled = RopeSpec::new()
        .axes_rope([8, 28, 28])
        .scaling(Scaling::Linear { factor: 2.0 });
    let e = ctx().rope(&scaled, 128).map(drop).expect_err("scaling");
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
    // Width first in alternation needs as many width pairs as height ones.
    let e = ctx()
        .rope(&ordered([8, 28, 26], MRopeOrder::WhThenT, true), 124)
        .map(drop)
        .expect_err("uneven h and w");
    assert!(matches!(e, Error::InvalidMRopeSection { .. }), "{e}");
    // The sections must still cover the pairs.
    let short = RopeSpec::new().axes_rope([8, 28, 27]);
    let e = ctx().rope(&short, 128).map(drop).expect_err("sections");
    assert!(matches!(e, Error::InvalidMRopeSection { .. }), "{e}");
    let short = RopeSpec::new().axes_rope4([16, 16, 16, 15]);
    let e = ctx()
        .rope(&short, 128)
        .map(drop)
        .expect_err("four sections");
    assert!(
        matches!(e, Error::InvalidMRopeSection { fourth: 15, .. }),
        "{e}"
    );
    // A base per axis: per-axis lists only, each a valid base.
    let shared = RopeSpec::new()
        .mrope([8, 28, 28], false)
        .axis_bases([2e4, 1e4, 1e4, 1e4]);
    let e = ctx().rope(&shared, 128).map(drop).expect_err("shared list");
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
    let bad = RopeSpec::new()
        .axes_rope([8, 28, 28])
        .axis_bases([2e4, 1e4, f64::NAN, 1e4]);
    let e = ctx().rope(&bad, 128).map(drop).expect_err("NaN base");
    assert!(
        matches!(e, Error::InvalidParameter { what: "base", .. }),
        "{e}"
    );
    // A fourth axis in another order, or with the shared list.
    for (order, frequencies) in [
        (MRopeOrder::Interleaved, AxisFrequencies::PerAxis),
        (MRopeOrder::Chunks, AxisFrequencies::Shared),
    ] {
        let mut four = RopeSpec::new();
        four.mrope = Some(MRope {
            section: [16, 16, 16],
            fourth: 16,
            order,
            frequencies,
        });
        let e = ctx().rope(&four, 128).map(drop).expect_err("fourth axis");
        assert!(matches!(e, Error::Unsupported(_)), "{e}");
    }
}

/// A spec on three axes with `section` pairs in `order`, per-axis lists (`per_axis`) or the
/// shared one.
fn ordered(section: [u64; 3], order: MRopeOrder, per_axis: bool) -> RopeSpec {
    use wgpu_posenc::{AxisFrequencies, MRope};
    let mut spec = RopeSpec::new();
    spec.mrope = Some(MRope {
        section,
        fourth: 0,
        order,
        frequencies: if per_axis {
            AxisFrequencies::PerAxis
        } else {
            AxisFrequencies::Shared
        },
    });
    spec
}

/// Dealt frequencies: every index of the shared list once, handed round the axes that still
/// have pairs (`[5, 16, 11]`: the temporal axis takes cards 0, 3, 6, 9, 12, then height and
/// width alternate; Pixtral's `[0, 16, 16]`: even cards to height, odd to width); no scaling
/// and no fourth axis.
#[test]
fn dealt_frequencies_hand_each_index_out_once() {
    use wgpu_posenc::{AxisFrequencies, Error, MRope, Scaling};
    let shared = reference::frequencies(&RopeSpec::new(), 64, 1).expect("shared");
    let index = |f: (f64, f64)| shared.0.iter().position(|&g| g == f).expect("in the list");
    let cards = |section| -> Vec<usize> {
        let spec = RopeSpec::new().axes_dealt(section);
        let (f, _) = reference::frequencies(&spec, 64, 1).expect("dealt");
        f.into_iter().map(index).collect()
    };
    let uneven = cards([5, 16, 11]);
    assert_eq!(uneven[..5], [0, 3, 6, 9, 12]);
    assert_eq!(uneven[5..10], [1, 4, 7, 10, 13]);
    assert_eq!(uneven[21..26], [2, 5, 8, 11, 14]);
    assert_eq!(uneven[10..12], [15, 17]);
    let mut sorted = uneven.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..32).collect::<Vec<_>>());
    let pixtral = cards([0, 16, 16]);
    assert!((0..16).all(|k| pixtral[k] == 2 * k && pixtral[16 + k] == 2 * k + 1));
    let scaled = RopeSpec::new()
        .axes_dealt([0, 16, 16])
        .scaling(Scaling::Linear { factor: 2.0 });
    let e = ctx().rope(&scaled, 64).map(drop).expect_err("scaling");
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
    let mut four = RopeSpec::new();
    four.mrope = Some(MRope {
        section: [8, 8, 8],
        fourth: 8,
        order: MRopeOrder::Chunks,
        frequencies: AxisFrequencies::Dealt,
    });
    let e = ctx().rope(&four, 64).map(drop).expect_err("fourth axis");
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
}

/// A fourth axis reads four planes: three are too few (a typed error, no read past them;
/// the fused QKV call, which reads three, refuses it: `tests/fused.rs`).
#[test]
fn a_fourth_axis_needs_four_planes() {
    use wgpu_posenc::Error;
    let spec = RopeSpec::new()
        .pair_layout(PairLayout::Interleaved)
        .axes_rope4([4, 10, 10, 8]);
    let layout = Layout::bshd(Dims {
        batch: 2,
        seq: 5,
        heads: 3,
        head_dim: 64,
    });
    let x = common::f32_buffer(&vec![0.5; 2 * 5 * 3 * 64]);
    let view = TensorView::new(&x, layout);
    let three = u32_buffer(&[1; 3 * 2 * 5]);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    for positions in [
        Positions::Axes(ArrayView::new(&three)),
        Positions::FloatAxes(ArrayView::new(&three)),
    ] {
        let e = ctx()
            .encode_rope(&mut encoder, &spec, &view, positions)
            .expect_err("three planes");
        assert!(
            matches!(e, Error::PositionIdsTooShort { needed: 40, .. }),
            "{e}"
        );
    }
    let four = u32_buffer(&[1; 4 * 2 * 5]);
    ctx()
        .encode_rope(
            &mut encoder,
            &spec,
            &view,
            Positions::Axes(ArrayView::new(&four)),
        )
        .expect("four planes");
}

/// The specs of [`f32_positions_match_the_reference`] over `pair` with the positions each
/// reads: 1-D, three axes (`[flat, axes, axes4]`) or four.
fn f32_cases(pair: PairLayout, [flat, axes, axes4]: [&Vec<f32>; 3]) -> Vec<(RopeSpec, &Vec<f32>)> {
    vec![
        (RopeSpec::new().pair_layout(pair), flat),
        (
            RopeSpec::new().pair_layout(pair).axes_rope([4, 14, 14]),
            axes,
        ),
        (
            RopeSpec::new().pair_layout(pair).mrope([8, 12, 12], false),
            axes,
        ),
        // A theta per axis (Cosmos').
        (
            RopeSpec::new()
                .pair_layout(pair)
                .axes_rope([12, 10, 10])
                .axis_bases([20_671.0, 1e4, 3.5e5, 1e4]),
            axes,
        ),
        // A fourth axis (FLUX.2's), four planes.
        (
            RopeSpec::new().pair_layout(pair).axes_rope4([4, 10, 10, 8]),
            axes4,
        ),
        // Per-axis lists in the other orders: width first (Kimi K2.5's alternation,
        // Step 3.7's blocks), and Qwen3-VL's interleaving.
        (
            ordered([0, 16, 16], MRopeOrder::WhThenT, true).pair_layout(pair),
            axes,
        ),
        (
            ordered([4, 16, 12], MRopeOrder::WhtChunks, true).pair_layout(pair),
            axes,
        ),
        (
            ordered([12, 10, 10], MRopeOrder::Interleaved, true).pair_layout(pair),
            axes,
        ),
        // One list dealt to the axes (Pixtral's, and uneven sections).
        (
            RopeSpec::new().pair_layout(pair).axes_dealt([0, 16, 16]),
            axes,
        ),
        (
            RopeSpec::new().pair_layout(pair).axes_dealt([5, 16, 11]),
            axes,
        ),
        // Revolutions a position (DINOv3's periods: the first pair turns exactly one
        // revolution), and frequencies of many revolutions a position (whole revolutions
        // carried beside the axis): LongRoPE's short factors of 0.003 raise the first to
        // 333 rad (53 revolutions), in revolutions to 333 revolutions.
        (
            RopeSpec::new()
                .pair_layout(pair)
                .axes_rope([0, 16, 16])
                .base(100.0)
                .frequency_unit(FrequencyUnit::Revolutions),
            axes,
        ),
        (fast_spec(pair, 0.003), flat),
        (
            fast_spec(pair, 0.003).frequency_unit(FrequencyUnit::Revolutions),
            flat,
        ),
    ]
}

/// LongRoPE whose short factors (`factor` each, at a short length) raise every frequency
/// by `1 / factor`.
fn fast_spec(pair: PairLayout, factor: f64) -> RopeSpec {
    use wgpu_posenc::{LongRope, Scaling};
    let mut spec = RopeSpec::new()
        .pair_layout(pair)
        .scaling(Scaling::LongRope(LongRope {
            short_factor: vec![factor; 32],
            long_factor: vec![1.0; 32],
            original_max_position_embeddings: 4096,
            max_position_embeddings: 8192,
            attention_factor: None,
        }));
    spec.scaling_seq_len = Some(16);
    spec
}

/// f32 positions (negative, fractional, up to 2^31), 1-D and on three or four axes, both pair
/// layouts, in a poisoned buffer with guards, against the f64 reference at the same f32
/// values.
#[test]
fn f32_positions_match_the_reference() {
    let mut rng = Rng::new(2028);
    let (b, s, h, d) = (2u64, 37u64, 3u64, 64u64);
    let n = (b * s) as usize;
    let unit = |rng: &mut Rng| rng.next_u64() as f64 / u64::MAX as f64;
    let mut draw = |count: usize| -> Vec<f32> {
        (0..count)
            .map(|i| match i % 4 {
                0 => (unit(&mut rng) * 200.0 - 100.0).round() as f32,
                1 => (unit(&mut rng) * 2.0 - 1.0) as f32,
                2 => ((unit(&mut rng) * 2.0 - 1.0) * 2f64.powi(31)) as f32,
                _ => ((unit(&mut rng) - 0.5) * 1e4) as f32,
            })
            .collect()
    };
    let (flat, axes, axes4) = (draw(n), draw(3 * n), draw(4 * n));
    for pair in [PairLayout::HalfSplit, PairLayout::Interleaved] {
        for (spec, values) in f32_cases(pair, [&flat, &axes, &axes4]) {
            let bits: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
            // A strided view with gaps between the rows and poison around it.
            let row = d + 3;
            let layout = Layout::strided([b, h, s, d], [h * s * row, s * row, row]).with_offset(5);
            let input = guarded_input(&mut Rng::new(7), &layout, 5);
            let ids = u32_buffer(&bits);
            let out = run_on_buffer(&input, |encoder, buffer| {
                let positions = axes_or_1d(ArrayView::new(&ids), spec.mrope.is_some());
                ctx()
                    .encode_rope(encoder, &spec, &TensorView::new(buffer, layout), positions)
                    .expect("encode");
            });
            let mut want = widen(&input);
            let host = axes_or_1d(&bits[..], spec.mrope.is_some());
            reference::rope(&spec, &layout, &mut want, host);
            assert_matches(&input, &out, &want, 2.5e-7, &format!("{spec:?}"));
        }
    }
}

/// f32 positions are refused where they cannot be taken: the fused QKV call, a cos/sin
/// cache, frequencies of 2^30 revolutions or more a position, axes without an axes spec, and
/// NaN, infinite or huge values on the host.
#[test]
fn f32_positions_are_refused_where_they_cannot_be_taken() {
    use wgpu_posenc::{Error, HostPositions};
    let ids = u32_buffer(&[0.5f32.to_bits(); 64]);
    let x = common::f32_buffer(&[0.25; 256]);
    let layout = Layout::bhsd([1, 1, 4, 64]);
    let view = TensorView::new(&x, layout);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    // LongRoPE factors of 1e-10 raise the first frequency to 1e10 rad (1.6e9 revolutions)
    // a position: more whole revolutions than the frequency words carry.
    let e = ctx()
        .encode_rope(
            &mut encoder,
            &fast_spec(PairLayout::HalfSplit, 1e-10),
            &view,
            Positions::Float(ArrayView::new(&ids)),
        )
        .expect_err("fast");
    let what = "frequency with f32 positions";
    assert!(
        matches!(e, Error::InvalidParameter { what: w, .. } if w == what),
        "{e}"
    );
    let e = ctx()
        .encode_rope(
            &mut encoder,
            &RopeSpec::new(),
            &view,
            Positions::FloatAxes(ArrayView::new(&ids)),
        )
        .expect_err("axes without an axes spec");
    assert!(matches!(e, Error::PositionsMismatch(_)), "{e}");
    // A cos/sin cache has a row per integer position.
    let cache_buffer = common::f32_buffer(&[0.5; 64 * 16]);
    let flag = u32_buffer(&[0]);
    let mut cache = wgpu_posenc::CosSinCache::vllm(&cache_buffer, 16, 64);
    cache.overflow_flag = Some(ArrayView::new(&flag));
    let call =
        wgpu_posenc::RopeCall::new(view, Positions::Float(ArrayView::new(&ids))).with_cache(cache);
    let e = ctx()
        .encode_rope_call(&mut encoder, &RopeSpec::new(), &call)
        .expect_err("cache");
    assert!(matches!(e, Error::PositionsMismatch(_)), "{e}");
    let mut data = vec![0.5f32; 256];
    for bad in [f32::NAN, f32::INFINITY, 5e9] {
        let p = [0.0, 1.0, bad, 2.0];
        let e = ctx()
            .rope_host(
                &RopeSpec::new(),
                layout,
                &mut data,
                HostPositions::float(&p),
            )
            .expect_err("bad value");
        assert!(matches!(e, Error::InvalidParameter { .. }), "{bad}: {e}");
    }
}
