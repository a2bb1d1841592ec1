// The unfused path's RMSNorm, for the benches only: every Q and K head row of the QKV case
// (`[1, S, heads, 128]` f32) divided in place by its root mean square plus eps (unit
// weights), one invocation a row, which reads the row twice: the pass the fused QK-norm
// saves.

struct Params {
    // Rows to normalize (S * normed) and workgroups along x.
    rows: u32,
    grid_x: u32,
    // Heads of a token, and the first `normed` of them are normalized (Q and K).
    heads: u32,
    normed: u32,
    eps: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> x: array<vec4<f32>>;

// A head of 128 elements: 32 vec4.
const ROW: u32 = 32u;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let r = (wid.y * params.grid_x + wid.x) * 64u + lid;
    if r >= params.rows {
        return;
    }
    let at = ((r / params.normed) * params.heads + r % params.normed) * ROW;
    var sum = 0.0;
    for (var i = 0u; i < ROW; i++) {
        let v = x[at + i];
        sum += dot(v, v);
    }
    let inv = inverseSqrt(sum / f32(4u * ROW) + params.eps);
    for (var i = 0u; i < ROW; i++) {
        x[at + i] = x[at + i] * inv;
    }
}
