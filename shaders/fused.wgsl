// Fused attention preprocessing, one dispatch: from the packed projection output
// `qkv [batch, q_heads + 2 kv_heads, seq, head_dim]` (view A, binding `x`), Q rotated in place
// or into view B (`x2`), K rotated and V copied into the KV cache at each token's position
// or slot.
//
// One invocation owns one (token, lane group g): for g below r / 2 / LANES the spec's pair
// group g (`load_pairs`), rotated in every Q and K head with one angle per lane; above, a
// group of 2 * LANES tail elements, copied. The pair groups and the tail groups cover each
// head's elements once, so V is copied by the same invocations.

#ifdef f16
enable f16;
#else
#ifdef cache_f16
enable f16;
#endif
#endif
#import common
#import dtype
#import pairs
#import fused/cache
#ifdef x4
#import fused/x4
#else
#import fused/x1
#endif

// Q goes to view B (`x2`) instead of back into `x`.
override Q_OUT: bool = false;
// Per-head RMS normalization of Q and K before the rotation (Qwen3, Gemma 3): each element
// times 1 / sqrt(mean square of its head + eps) times its factor (the host packs `w` or
// `1 + w`). Q then goes out of place: every invocation of a head reads the whole head.
override QK_NORM: bool = false;
// Paged cache: token t goes to slot `aux[aux_base + t]` (an i32; negative: skipped), else
// to its position (the first axis for M-RoPE) in its batch row.
override PAGED: bool = false;

// Returned by `cache_row` for a token that is not cached (a negative slot), and for one whose
// slot or position is past the cache. (No element index of a binding comes near them.)
const NOT_CACHED: u32 = 0xffffffffu;
const PAST_CACHE: u32 = 0xfffffffeu;

// The element offset in the caches of token (w.b, w.s)'s row of KV head 0 (from k_base and
// v_base), or NOT_CACHED, or PAST_CACHE.
fn cache_row(w: Work) -> u32 {
    var at: u32;
    if PAGED {
        let slot = bitcast<i32>(aux[params.aux_base + w.b * params.ids_stride_b + w.s]);
        if slot < 0 {
            return NOT_CACHED;
        }
        at = u32(slot);
    } else {
        at = first_lane(lane_positions(w, UV(0u)));
    }
    if at >= params.cache_len {
        return PAST_CACHE;
    }
    return w.b * params.cache_stride_b + at * params.cache_stride_p;
}

// Tail group g (g >= r / 2 / LANES): the 2 LANES elements from r + 2 LANES (g - r / 2 / LANES),
// as two lane groups `a` (the first LANES) and `b` (the next).
fn tail_element(g: u32) -> u32 {
    return 2u * params.half + 2u * LANES * (g - params.half / LANES);
}

fn load_tail(v: u32, e0: u32, g: u32) -> Pairs {
    let e = e0 + tail_element(g);
    return Pairs(ldv(v, e), ldv(v, e + LANES));
}

fn store_tail(v: u32, e0: u32, g: u32, p: Pairs) {
    let e = e0 + tail_element(g);
    stv(v, e, p.a);
    stv(v, e + LANES, p.b);
}

fn store_cache_tail(c: u32, e0: u32, g: u32, p: Pairs) {
    let e = e0 + tail_element(g);
    st_cachev(c, e, p.a);
    st_cachev(c, e + LANES, p.b);
}

// 1 / sqrt(mean square + eps) of the head at `at`, every element read in the same order by
// every invocation of the head (so all agree).
fn inv_rms(at: u32) -> f32 {
    let d = 2u * params.groups * params.span * LANES;
    var sum = 0.0;
#ifdef x4
    for (var e = 0u; e < d; e += 4u) {
        let x = ld4(VIEW_A, at + e);
        sum += dot(x, x);
    }
#else
    for (var e = 0u; e < d; e++) {
        let x = ld1(VIEW_A, at + e);
        sum += x * x;
    }
#endif
    return inverseSqrt(sum / f32(d) + params.norm_eps);
}

// Lane group g of a head normalized: `k` picks K's factors (else Q's).
fn normed(p: Pairs, inv: f32, k: bool, g: u32) -> Pairs {
    if !QK_NORM {
        return p;
    }
    let heads = select(0u, 2u * params.groups * params.span, k);
    // The factors follow the frequencies' three entries per rotated lane group; K's follow
    // Q's, a head's worth later.
    let at = 3u * (params.half / LANES) + heads + 2u * g;
    return Pairs(p.a * inv * bitcast<FV>(freq[at]), p.b * inv * bitcast<FV>(freq[at + 1u]));
}

// (a, b) -> (a c - b s, a s + b c), lane by lane.
fn turned(p: Pairs, c: FV, s: FV) -> Pairs {
    return Pairs(p.a * c - p.b * s, p.a * s + p.b * c);
}

// The angle of lane group g (cos, sin; identity for a tail group), with the attention
// factor and the direction.
struct Turn {
    tail: bool,
    c: FV,
    s: FV,
}

fn turn_of(w: Work, g: u32) -> Turn {
    if g >= params.half / LANES {
        return Turn(true, FV(1.0), FV(0.0));
    }
    let sc = sincos_turns(turns(group_positions(w, g), freq[3u * g], freq[3u * g + 1u]));
    return Turn(false, sc.c * params.scale, sc.s * (params.scale * params.sin_sign));
}

// Lane group g of the Q head at `at`: rotated in place, or into the Q head at `out`
// (normalized first, with `inv` its head's 1 / rms).
fn q_group(at: u32, out: u32, g: u32, t: Turn, inv: f32) {
    if t.tail {
        if Q_OUT {
            store_tail(VIEW_B, out, g, normed(load_tail(VIEW_A, at, g), inv, false, g));
        }
    } else if Q_OUT {
        let p = normed(load_pairs(VIEW_A, at, g), inv, false, g);
        store_pairs(VIEW_B, out, g, turned(p, t.c, t.s));
    } else {
        rotate_pairs(VIEW_A, at, g, t.c, t.s);
    }
}

// Lane group g of the K and V heads at `k` and `v` into the caches at element `at` (K
// normalized first, with `inv` its head's 1 / rms).
fn kv_group(k: u32, v: u32, at: u32, g: u32, t: Turn, inv: f32) {
    if t.tail {
        store_cache_tail(KC, params.k_base + at, g, normed(load_tail(VIEW_A, k, g), inv, true, g));
        store_cache_tail(VC, params.v_base + at, g, load_tail(VIEW_A, v, g));
    } else {
        let p = normed(load_pairs(VIEW_A, k, g), inv, true, g);
        store_cache_pairs(KC, params.k_base + at, g, turned(p, t.c, t.s));
        store_cache_pairs(VC, params.v_base + at, g, load_pairs(VIEW_A, v, g));
    }
}

fn head_inv_rms(at: u32) -> f32 {
    if QK_NORM {
        return inv_rms(at);
    }
    return 1.0;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let w = work_item(wid, lid);
    if !w.valid {
        return;
    }
    // With span 2 (uniform: every invocation takes the same branch) an invocation owns two
    // lane groups and visits each head once for both, as the RoPE kernel does.
    let two = params.span == 2u;
    let g0 = w.g * params.span;
    let t0 = turn_of(w, g0);
    var t1 = t0;
    if two {
        t1 = turn_of(w, g0 + 1u);
    }
    let row = row_start(w);
    let out = row_start2(w);
    for (var h = 0u; h < params.n_h; h++) {
        let at = row + h * params.stride_h;
        let to = out + h * params.stride2_h;
        let inv = head_inv_rms(at);
        q_group(at, to, g0, t0, inv);
        if two {
            q_group(at, to, g0 + 1u, t1, inv);
        }
    }
    let cached = cache_row(w);
    if cached == PAST_CACHE {
        atomicOr(&flag[params.flag_base], 1u);
    }
    if cached == PAST_CACHE || cached == NOT_CACHED {
        return;
    }
    for (var h = 0u; h < params.n_h2; h++) {
        let at = cached + h * params.cache_stride_h;
        let k = row + (params.n_h + h) * params.stride_h;
        let v = row + (params.n_h + params.n_h2 + h) * params.stride_h;
        let inv = head_inv_rms(k);
        kv_group(k, v, at, g0, t0, inv);
        if two {
            kv_group(k, v, at, g0 + 1u, t1, inv);
        }
    }
}
