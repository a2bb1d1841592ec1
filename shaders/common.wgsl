// Bindings, parameters, positions and angles shared by the pair kernels.
//
// A dispatch covers one block of a strided [batch, heads, seq, dim] view A: n_b x n_h x n_s
// rows whose elements all lie in the binding `x`. One invocation owns one (batch, token,
// pair group): it computes the G angles of its group once and applies them to the same
// pairs of every head of that token (the angle does not depend on the head), in view A and,
// for fused Q+K, in view B (`x2`); out of place, view B is the source and A the destination.

#import width
#import dtype
#import gather
#import trig

struct Params {
    // View A: element index in `x` of the block's first row, and element strides between
    // batches, heads and tokens.
    base: u32,
    stride_b: u32,
    stride_h: u32,
    stride_s: u32,
    // View B, the same in `x2`.
    base2: u32,
    stride2_b: u32,
    stride2_h: u32,
    stride2_s: u32,
    // Block extents; n_h2 is view B's head count when it is a second tensor (K).
    n_b: u32,
    n_h: u32,
    n_h2: u32,
    n_s: u32,
    // Pair groups per row (r / 2 / G); r / 2, the element distance between the halves of a
    // half-split pair; out of place, the tail length head_dim - r and each invocation's share.
    groups: u32,
    half: u32,
    tail: u32,
    tail_chunk: u32,
    // Positions: the block's first position (contiguous), index of its first value in `ids`,
    // the ids' batch stride (seq), and the distance between M-RoPE axes in `ids`.
    pos_start: u32,
    ids_base: u32,
    ids_stride_b: u32,
    axis_stride: u32,
    // Varlen: index of the offsets in `aux`, number of sequences; the block's first token
    // (varlen and per-row starts).
    aux_base: u32,
    num_seqs: u32,
    tok0: u32,
    // Sinusoidal: the position whose row is zero (padding).
    pad_pos: u32,
    // Cos/sin cache: rows, first cos and sin in their bindings, row stride, flag index.
    max_pos: u32,
    cos_base: u32,
    sin_base: u32,
    cache_stride: u32,
    flag_base: u32,
    // Invocations in this dispatch (n_b * n_s * groups) and workgroups along x.
    total: u32,
    grid_x: u32,
    // -1 for the inverse rotation, else 1.
    sin_sign: f32,
    // RoPE: attention factor on cos and sin. Sinusoidal add: the embedding scale.
    scale: f32,
    // Pair groups per invocation, 1 or 2 (vec4 rows with an even number of groups): the
    // invocation of index g owns groups [g span, (g + 1) span).
    span: u32,
    // Consecutive tokens per invocation (the sinusoidal table and add with contiguous
    // positions; else 1): invocation (b, k, g) owns tokens [k tokens, (k + 1) tokens).
    tokens: u32,
    // Fused QKV: the element index in the K and V cache bindings of KV head 0 of batch row
    // 0 at position (or slot) 0, the element strides between batch rows, heads and
    // positions, and the number of positions (or slots) the caches hold.
    k_base: u32,
    v_base: u32,
    cache_stride_b: u32,
    cache_stride_h: u32,
    cache_stride_p: u32,
    cache_len: u32,
    // Fused QKV with QK-norm: the epsilon added to the mean square, and the lane groups of
    // a head (head_dim / 2 / LANES; `groups` is then the invocations of one token).
    norm_eps: f32,
    norm_groups: u32,
    // RoPE with half-split pairs in blocks (RopeSpec::pair_blocks): pairs per block, the
    // distance between a pair's elements; read only where BLOCKS is set.
    block: u32,
    // RoPE from a caller's table (RopeSpec::learned, DENSE axes): the distance in `freq`
    // between the table's axes and between its heads (0 for one head), and the first head of
    // view A's block and of view B's.
    dense_axis: u32,
    dense_head: u32,
    dense_h0: u32,
    dense_h0_b: u32,
}

// RoPE from a caller's table (RopeSpec::learned): its axes (0: the spec's frequencies).
override DENSE: u32 = 0u;

@group(0) @binding(0) var<uniform> params: Params;
// Per pair group g: G low words at 3g, G high words at 3g + 1 (64-bit fixed-point
// revolutions per position), and the M-RoPE axis of each pair at 3g + 2.
@group(0) @binding(2) var<storage, read> freq: array<UV>;
// Position ids, per-row starts, or cu_seqlens.
@group(0) @binding(3) var<storage, read> ids: array<u32>;
// Varlen per-sequence offsets.
@group(0) @binding(4) var<storage, read> aux: array<u32>;
// Caller-provided cos and sin caches (may be one buffer bound twice).
@group(0) @binding(6) var<storage, read> cos_cache: array<f32>;
@group(0) @binding(7) var<storage, read> sin_cache: array<f32>;
// Set to 1 when a position past the cache was clamped.
@group(0) @binding(8) var<storage, read_write> flag: array<atomic<u32>>;

// 0: contiguous from pos_start; 1: one start per batch row; 2: ids [batch, seq];
// 3: varlen cu_seqlens; 4: M-RoPE axes [3, batch, seq]; 5: f32 positions [batch, seq] (their
// bits, read as ids are; `float_sincos` turns them into angles); 6: f32 positions on three
// axes [3, batch, seq] (RoPE).
override POS_MODE: u32 = 0u;
// Varlen: per-sequence offsets in `aux`.
override HAS_OFFSETS: bool = false;
// Angles from the cos/sin cache instead of the frequencies.
override FROM_CACHE: bool = false;
// Position axes in four planes `[4, batch, seq]` (a fourth axis), not three.
override AXES4: bool = false;
// RoPE: view B lies in view A's buffer, which is bound once, as `x` (WebGPU forbids two
// writable bindings of one buffer that overlap).
override SHARED: bool = false;

// The first argument of every element access: which view it reads or writes.
const VIEW_A: u32 = 0u;
const VIEW_B: u32 = 1u;

const WORKGROUP: u32 = 64u;

// The two members of G pairs: `a` holds the first element of each pair, `b` the second.
struct Pairs {
    a: FV,
    b: FV,
}

// What one invocation owns, or `valid == false` past the end of the block: batch b, its first
// token s (of `tokens`), and its pair groups from g * span.
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
    let blocks = (params.n_s + params.tokens - 1u) / params.tokens;
    return Work(true, t / blocks, (t % blocks) * params.tokens, g);
}

// Varlen: the sequence holding token t is the last one whose start cu_seqlens[i] <= t.
fn varlen_position(t: u32) -> u32 {
    var lo = 0u;
    var hi = params.num_seqs - 1u;
    while lo < hi {
        let mid = (lo + hi + 1u) >> 1u;
        if ids[params.ids_base + mid] <= t {
            lo = mid;
        } else {
            hi = mid - 1u;
        }
    }
    var p = t - ids[params.ids_base + lo];
    if HAS_OFFSETS {
        p += aux[params.aux_base + lo];
    }
    return p;
}

// The position of each lane's pair for token (w.b, w.s); `axis` matters for M-RoPE only.
fn lane_positions(w: Work, axis: UV) -> UV {
    switch POS_MODE {
        case 1u: {
            // w.s counts from the block's first token, tok0 from the row's.
            return UV(ids[params.ids_base + w.b] + params.tok0 + w.s);
        }
        case 2u, 5u: {
            return UV(ids[params.ids_base + w.b * params.ids_stride_b + w.s]);
        }
        case 3u: {
            return UV(varlen_position(params.tok0 + w.s));
        }
        case 4u, 6u: {
            return plane_positions(params.ids_base + w.b * params.ids_stride_b + w.s, axis);
        }
        default: {
            // The host checks that start + seq - 1 fits in u32.
            return UV(params.pos_start + w.s);
        }
    }
}

// The positions of a token whose first plane's value is at ids[i], each lane on its axis
// (planes `axis_stride` apart).
fn plane_positions(i: u32, axis: UV) -> UV {
    let p1 = UV(ids[i + params.axis_stride]);
    let p2 = UV(ids[i + 2u * params.axis_stride]);
    let p = select(select(UV(ids[i]), p1, axis == UV(1u)), p2, axis == UV(2u));
    if AXES4 {
        // A fourth plane (FLUX.2's `l`), bound only for such specs.
        return select(p, UV(ids[i + 3u * params.axis_stride]), axis == UV(3u));
    }
    return p;
}

// Sine and cosine of the G angles of pair group g at lane positions p.
fn angles_at(p: UV, g: u32) -> SinCos {
    if POS_MODE == 5u || POS_MODE == 6u {
        // f32 positions: the whole revolutions a position are the third word's bits above
        // the axis (`axis | W << 2`; 0 below one revolution a position).
        return float_sincos(p, freq[3u * g], freq[3u * g + 1u], freq[3u * g + 2u] >> UV(2u));
    }
    if FROM_CACHE {
        // Positions past the cache are clamped to its last row and flagged: never a read
        // outside the cache.
        let over = p >= UV(params.max_pos);
        if any(over) {
            atomicOr(&flag[params.flag_base], 1u);
        }
        let row = select(p, UV(params.max_pos - 1u), over) * params.cache_stride + lanes(g);
        return SinCos(gather_sin(UV(params.sin_base) + row), gather_cos(UV(params.cos_base) + row));
    }
    return sincos_turns(turns(p, freq[3u * g], freq[3u * g + 1u]));
}

// Positions of the lanes of pair group g of token (w.b, w.s): the axis is the third word's
// low two bits.
fn group_positions(w: Work, g: u32) -> UV {
    return lane_positions(w, freq[3u * g + 2u] & UV(3u));
}

// The G angles of a pair group at lane positions p as 64-bit fixed-point revolutions
// `p * F mod 2^64`: low and high words (`hi` is what `turns` returns), and the group's
// frequency words, for stepping.
struct Revolutions {
    lo: UV,
    hi: UV,
    f_lo: UV,
    f_hi: UV,
}

fn group_revolutions(p: UV, g: u32) -> Revolutions {
    let f_lo = freq[3u * g];
    let f_hi = freq[3u * g + 1u];
    return Revolutions(p * f_lo, turns(p, f_lo, f_hi), f_lo, f_hi);
}

// The same at the next position: `+ F` in 64-bit arithmetic (the carry out of the low word
// goes into the high word), exactly what `group_revolutions(p + 1, g)` computes, for the
// cost of an add instead of a 64-bit product.
fn next_position(r: Revolutions) -> Revolutions {
    let lo = r.lo + r.f_lo;
    let carry = select(UV(0u), UV(1u), lo < r.lo);
    return Revolutions(lo, r.hi + r.f_hi + carry, r.f_lo, r.f_hi);
}

// Element index of the first element of row (b, s), head 0, in view A and in view B.
fn row_start(w: Work) -> u32 {
    return params.base + w.b * params.stride_b + w.s * params.stride_s;
}

fn row_start2(w: Work) -> u32 {
    return params.base2 + w.b * params.stride2_b + w.s * params.stride2_s;
}
