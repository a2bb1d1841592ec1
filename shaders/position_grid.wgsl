// Position grids (src/position_grid.rs): the positions of image and video tokens, written as
// `[axes, batch, tokens]` f32 values (their bits), the array `Positions::FloatAxes` reads.
//
// The grid is a list of segments, SEGMENT words each: the segment's first token, its tokens,
// its shape (DIMS extents, slowest first, padded with 1s), then per axis (4 of them) the
// integer offset, DIMS integer steps and the f32 scale. The position of a token at multi-index
// `i` on axis `a` is `f32(offset + Σ_d steps[d] * i[d]) * scale`: the host keeps the sum within
// ±2^24, so the conversion is exact and the one product is correctly rounded, the value the
// host computes (`PositionGrid::positions`).

struct Params {
    // Tokens of one batch row.
    tokens: u32,
    // batch * tokens: the values of one axis.
    rows: u32,
    // Segments in `grid`.
    segments: u32,
    // Axes written (1, 3 or 4).
    axes: u32,
    // Index in `out` of the first value.
    base: u32,
    // Workgroups along x.
    grid_x: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> grid: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

const WORKGROUP: u32 = 64u;
const SEGMENT: u32 = 40u;
const DIMS: u32 = 5u;
// Words of one axis: offset, DIMS steps, scale.
const AXIS: u32 = 7u;

// One invocation per token of each batch row: it finds the token's segment and multi-index
// once and writes its position on every axis.
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * params.grid_x + wid.x) * WORKGROUP + lid;
    if i >= params.rows {
        return;
    }
    let t = i % params.tokens;
    // The segment holding token t: the last one whose first token is at most t.
    var s = 0u;
    for (var k = 1u; k < params.segments; k++) {
        if grid[k * SEGMENT] <= t {
            s = k * SEGMENT;
        }
    }
    var rem = t - grid[s];
    var index: array<i32, 5>;
    for (var d = 0u; d < DIMS; d++) {
        let dim = DIMS - 1u - d;
        let extent = max(grid[s + 2u + dim], 1u);
        index[dim] = i32(rem % extent);
        rem = rem / extent;
    }
    for (var a = 0u; a < params.axes; a++) {
        let w = s + 2u + DIMS + a * AXIS;
        var sum = bitcast<i32>(grid[w]);
        for (var d = 0u; d < DIMS; d++) {
            sum += bitcast<i32>(grid[w + 1u + d]) * index[d];
        }
        let p = f32(sum) * bitcast<f32>(grid[w + 1u + DIMS]);
        out[params.base + a * params.rows + i] = bitcast<u32>(p);
    }
}
