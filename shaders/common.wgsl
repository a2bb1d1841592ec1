// Bindings, parameters and invocation decoding shared by the pair kernels.
//
// A dispatch covers one block of a strided [batch, heads, seq, dim] view: `n_b` x `n_h` x
// `n_s` rows, whose elements all lie in the storage binding `x`. One invocation owns one
// (batch, token, pair group): it computes the G angles of its group once and applies them
// to the same pairs of every head of that token (the angle does not depend on the head).

struct Params {
    // Element index in `x` of the block's first row (batch b0, head h0, token s0).
    base: u32,
    // Element strides between consecutive batches, heads and tokens.
    stride_b: u32,
    stride_h: u32,
    stride_s: u32,
    // Block extents.
    n_b: u32,
    n_h: u32,
    n_s: u32,
    // Pair groups per row: r / 2 / G.
    groups: u32,
    // r / 2: element distance between the two halves of a half-split pair.
    half: u32,
    // Position of token s0 when positions are contiguous.
    pos_start: u32,
    // Index in `ids` of (b0, s0), and the index stride between batches (the sequence length).
    ids_base: u32,
    ids_stride_b: u32,
    // Invocations in this dispatch (n_b * n_s * groups) and workgroups along x.
    total: u32,
    grid_x: u32,
    // -1 for the inverse rotation, else 1.
    sin_sign: f32,
    // RoPE: attention factor on cos and sin. Sinusoidal add: the embedding scale.
    scale: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
// Per pair group g: G low words at 2g, G high words at 2g + 1 (64-bit fixed-point
// revolutions per position).
@group(0) @binding(2) var<storage, read> freq: array<UV>;
// Position ids, [batch, seq] row-major u32.
@group(0) @binding(3) var<storage, read> ids: array<u32>;

// True: positions come from `ids`; false: contiguous from `pos_start`.
override POS_IDS: bool = false;

const WORKGROUP: u32 = 64u;

// The two members of G pairs: `a` holds the first element of each pair, `b` the second.
struct Pairs {
    a: FV,
    b: FV,
}

// What one invocation owns, or `valid == false` past the end of the block.
struct Work {
    valid: bool,
    b: u32,
    s: u32,
    g: u32,
}

fn work_item(wid: vec3<u32>, lid: u32) -> Work {
    // Dispatches wider than 65 535 workgroups fold into y: linearize (x, y) back.
    let i = (wid.y * params.grid_x + wid.x) * WORKGROUP + lid;
    if i >= params.total {
        return Work(false, 0u, 0u, 0u);
    }
    let g = i % params.groups;
    let t = i / params.groups;
    return Work(true, t / params.n_s, t % params.n_s, g);
}

fn position(b: u32, s: u32) -> u32 {
    if POS_IDS {
        return ids[params.ids_base + b * params.ids_stride_b + s];
    }
    // The host checks that start + seq - 1 fits in u32.
    return params.pos_start + s;
}

// Sine and cosine of the G angles of pair group g at position p.
fn group_angles(p: u32, g: u32) -> SinCos {
    return sincos_turns(turns(UV(p), freq[2u * g], freq[2u * g + 1u]));
}

// Element index of the first element of row (b, s) of the block, head 0.
fn row_start(w: Work) -> u32 {
    return params.base + w.b * params.stride_b + w.s * params.stride_s;
}
