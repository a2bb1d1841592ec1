//! timm's 2-D rotary embeddings (`tests/data/timm/timm_rope.py`): EVA-02's and the RoPE-ViTs'
//! `RotaryEmbeddingCat` (per-axis bands over a patch grid, rescaled to the pretraining grid)
//! and RoPE-Mixed's `RotaryEmbeddingMixed` (learned frequencies per layer and head), each
//! model built by timm and its q rotated by timm's `apply_rot_embed_cat`. The crate rotates
//! the same q with the prefix (class, register) tokens in front, left as they are, the
//! positions made on the GPU by a [`PositionGrid`] in the same encoder.

use super::common::{Rng, ctx, run_on_buffer, test_data};
use super::{from_rows, indices, list, put_rows, u};
use serde_json::Value;
use wgpu_posenc::{
    ArrayView, Dims, GridAxis, GridSegment, Layout, LearnedFrequencies, PairLayout, PositionGrid,
    Positions, RopeSpec, TensorView, reference,
};

/// The model's grid: its prefix tokens at 0, then the patches row-major at timm's
/// coordinates — channel 0 on plane 1, channel 1 on plane 2 (the axes of the cat embedding),
/// or `t_x` on plane 0 and `t_y` on plane 1 (the mixed one's learned axes). `ij` indexing
/// puts the row in channel 0, `xy` the column; EVA-02's `ref_feat_shape` scales each by
/// `ref / feat`.
fn grid(m: &Value, mixed: bool) -> PositionGrid {
    let feat: Vec<u32> = m["feat_shape"]
        .as_array()
        .expect("feat")
        .iter()
        .map(|v| u(v) as u32)
        .collect();
    let scale = |c: usize| match m["ref_feat_shape"].as_array() {
        Some(r) => u(&r[c]) as f32 / feat[c] as f32,
        None => 1.0,
    };
    let xy = m["grid_indexing"] == "xy";
    let dims = if xy { [1, 0] } else { [0, 1] };
    let c0 = GridAxis::index(dims[0]).scaled(scale(dims[0]));
    let c1 = GridAxis::index(dims[1]).scaled(scale(dims[1]));
    let zero = GridAxis::constant(0);
    let axes = if mixed {
        [c0, c1, zero]
    } else {
        [zero, c0, c1]
    };
    PositionGrid::new(3)
        .text_zeros(u(&m["prefix"]) as u32)
        .then(GridSegment::new(&[feat[0], feat[1]], &axes))
}

/// The generated coordinates of the patches against timm's own grid: the largest
/// difference (0 where the scale is 1 or a power of two).
fn coordinate_error(m: &Value, grid: &PositionGrid, mixed: bool) -> f64 {
    let pos = ctx().position_grid_host(grid, 1).expect("grid");
    let n = grid.tokens() as usize;
    let prefix = u(&m["prefix"]) as usize;
    let planes = if mixed { [0, 1] } else { [1, 2] };
    let mut worst = 0.0f64;
    for (t, c) in m["grid"].as_array().expect("grid").iter().enumerate() {
        for (k, &theirs) in list(c).iter().enumerate() {
            let mine = f64::from(pos[planes[k] * n + prefix + t]);
            worst = worst.max((mine - theirs).abs());
        }
    }
    for p in 0..prefix {
        assert!(
            (0..3).all(|a| pos[a * n + p] == 0.0),
            "prefix token {p} not at 0"
        );
    }
    worst
}

/// `q` (`[prefix + N, heads, head_dim]`, BSHD) rotated on the GPU with the grid written in
/// the same encoder; the rotated rows of `rows` (grid tokens) against timm's, and the prefix
/// tokens unchanged. Returns the largest differences: the GPU from timm, the GPU from the
/// f64 reference at the grid's positions (every token), and the reference at timm's own
/// coordinates from timm (timm's own error: its f32 angles and sines).
fn rotate_and_compare(
    m: &Value,
    spec: &RopeSpec,
    grid: &PositionGrid,
    rotated: &Value,
    mixed: bool,
) -> [f64; 3] {
    let (heads, d) = (u(&m["heads"]), u(&m["head_dim"]));
    let (prefix, s) = (u(&m["prefix"]) as usize, grid.tokens());
    let row = (heads * d) as usize;
    let mut q = Rng::new(s + heads).values(s as usize * row);
    let rows = indices(&m["rows"]);
    put_rows(&mut q, &m["q"], &rows, prefix, row);
    let positions = wgpu::util::DeviceExt::create_buffer_init(
        ctx().device(),
        &wgpu::util::BufferInitDescriptor {
            label: Some("timm grid"),
            contents: &vec![0xffu8; 3 * s as usize * 4],
            usage: wgpu::BufferUsages::STORAGE,
        },
    );
    let shape = Dims {
        batch: 1,
        seq: s,
        heads,
        head_dim: d,
    };
    let got = run_on_buffer(&q, |encoder, buffer| {
        let out = ArrayView::new(&positions);
        ctx()
            .encode_position_grid(encoder, grid, 1, out)
            .expect("grid");
        let view = TensorView::new(buffer, Layout::bshd(shape));
        ctx()
            .encode_rope(encoder, spec, &view, Positions::FloatAxes(out))
            .expect("rope");
    });
    assert_eq!(
        got[..prefix * row],
        q[..prefix * row],
        "prefix tokens rotated"
    );
    let layout = Layout::bshd(shape);
    let reference = |words: &[u32]| {
        let mut x: Vec<f64> = q.iter().map(|&v| f64::from(v)).collect();
        reference::rope(spec, &layout, &mut x, Positions::FloatAxes(words));
        x
    };
    let mine: Vec<u32> = grid
        .positions(1)
        .expect("grid")
        .iter()
        .map(|p| p.to_bits())
        .collect();
    let exact = reference(&mine);
    let ours = got
        .iter()
        .zip(&exact)
        .map(|(&a, &b)| (f64::from(a) - b).abs())
        .fold(0.0, f64::max);
    // timm's own coordinates in the same planes.
    let mut theirs = vec![0u32; 3 * s as usize];
    let planes = if mixed { [0, 1] } else { [1, 2] };
    for (t, c) in m["grid"].as_array().expect("grid").iter().enumerate() {
        for (k, &v) in list(c).iter().enumerate() {
            theirs[planes[k] * s as usize + prefix + t] = (v as f32).to_bits();
        }
    }
    let at_theirs = reference(&theirs);
    let from_timm = from_rows(&got, rotated, &rows, prefix, row);
    let own = from_rows(&at_theirs, rotated, &rows, prefix, row);
    [from_timm, ours, own]
}

#[test]
fn timm_rotary_embeddings_match_timm() {
    let data = test_data("timm/timm_rope.json");
    for m in data["models"].as_array().expect("models") {
        let name = m["name"].as_str().expect("name");
        let d = u(&m["head_dim"]);
        let mixed = m["cls"] == "RotaryEmbeddingMixed";
        let grid = grid(m, mixed);
        let off = coordinate_error(m, &grid, mixed);
        // One f32 rounding of a coordinate below 32 at most (2^-19), where timm divides and
        // multiplies and the grid multiplies once.
        assert!(
            off <= 1.0 / 524_288.0,
            "{name}: coordinates {off:e} from timm's grid"
        );
        let layout = if m["rotate_half"] == true {
            PairLayout::HalfSplit
        } else {
            PairLayout::Interleaved
        };
        let base = RopeSpec::new().pair_layout(layout);
        // A coordinate one f32 rounding away from timm's turns by that much times the
        // fastest frequency (1 for the cat bands; the mixed tables' own largest).
        let mut results = Vec::new();
        let mut fastest = 1.0f64;
        if mixed {
            for layer in m["layers"].as_array().expect("layers") {
                let values: Vec<f64> = layer["freqs"]
                    .as_array()
                    .expect("freqs")
                    .iter()
                    .flat_map(|axis| axis.as_array().expect("axis").iter().flat_map(list))
                    .collect();
                fastest = values.iter().fold(fastest, |a, v| a.max(v.abs()));
                let table = LearnedFrequencies::new(2, u(&m["heads"]), values);
                let spec = base.clone().learned(table);
                results.push((
                    u(&layer["layer"]),
                    rotate_and_compare(m, &spec, &grid, &layer["rotated"], true),
                ));
            }
        } else {
            let nb = d / 4;
            let spec = base
                .base(m["temperature"].as_f64().expect("temperature"))
                .axes_rope([0, nb, nb]);
            results.push((0, rotate_and_compare(m, &spec, &grid, &m["rotated"], false)));
        }
        // The GPU within the contract of the reference; timm off the exact rotation by its
        // own f32 error, and by a coordinate's rounding where the scale is not a power of two
        // (times the fastest frequency, 1 for the cat bands, and |x| <= 5).
        for (layer, [from_timm, ours, own]) in results {
            let allowed = own + 4e-7 + off * fastest * 5.0;
            assert!(
                ours <= 4e-7,
                "{name} layer {layer}: {ours:e} from the reference"
            );
            assert!(
                from_timm <= allowed,
                "{name} layer {layer}: {from_timm:e} from timm (allowed {allowed:e})"
            );
            eprintln!(
                "{name} (layer {layer}): {from_timm:.2e} from timm (timm's own error {own:.2e}), \
                 {ours:.2e} from the reference; coordinates within {off:.1e} of timm's grid"
            );
        }
    }
}
