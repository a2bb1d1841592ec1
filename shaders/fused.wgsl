// Fused attention preprocessing, one dispatch: from the packed projection output
// `qkv [tokens, (Hq + 2 Hkv) * D]` (view A, binding `x`), Q rotated in place or into view B
// (`x2`), K rotated and V copied into the KV cache at each token's position or slot.
//
// One invocation owns one (token, element pair g), g in 0..D/2: for g < r/2 the spec's pair
// g, rotated in every Q and K head with one angle; for g >= r/2 two tail elements, copied.
// The pairs and the tail cover each head's D elements once, so V is copied by the same
// invocations.

#ifdef f16
enable f16;
#else
#ifdef cache_f16
enable f16;
#endif
#endif
#import common
#import dtype
#import fused/cache

// Q goes to view B (`x2`) instead of back into `x`.
override Q_OUT: bool = false;
// Paged cache: token t goes to slot `aux[aux_base + t]` (an i32; negative: skipped), else
// to its position (the first axis for M-RoPE) in its batch row.
override PAGED: bool = false;

// The two elements of a head that invocation g owns.
fn owned_elements(g: u32) -> vec2<u32> {
    if g >= params.half {
        let t = 2u * params.half + 2u * (g - params.half);
        return vec2(t, t + 1u);
    }
#ifdef interleaved
    return vec2(2u * g, 2u * g + 1u);
#else
    return vec2(g, g + params.half);
#endif
}

// (cos, sin) of pair g's angle for token (w.b, w.s), with the attention factor and the
// direction; (1, 0) for the tail.
fn angle(w: Work) -> vec2<f32> {
    if w.g >= params.half {
        return vec2(1.0, 0.0);
    }
    let p = lane_positions(w, freq[3u * w.g + 2u]);
    let sc = sincos_turns(turns(p, freq[3u * w.g], freq[3u * w.g + 1u]));
    return vec2(sc.c * params.scale, sc.s * (params.scale * params.sin_sign));
}

fn rotate(x: vec2<f32>, cs: vec2<f32>) -> vec2<f32> {
    return vec2(x.x * cs.x - x.y * cs.y, x.x * cs.y + x.y * cs.x);
}

fn load2(v: u32, at: u32, e: vec2<u32>) -> vec2<f32> {
    return vec2(ld1(v, at + e.x), ld1(v, at + e.y));
}

fn store2(v: u32, at: u32, e: vec2<u32>, x: vec2<f32>) {
    st1(v, at + e.x, x.x);
    st1(v, at + e.y, x.y);
}

// Returned by `cache_row` for a token that is not cached (a negative slot), and for one whose
// slot or position is past the cache. (No element index of a binding comes near them.)
const NOT_CACHED: u32 = 0xffffffffu;
const PAST_CACHE: u32 = 0xfffffffeu;

// The element offset in the caches of token (w.b, w.s)'s row of KV head 0 (from k_base and
// v_base), or NOT_CACHED, or PAST_CACHE.
fn cache_row(w: Work) -> u32 {
    var at: u32;
    if PAGED {
        let slot = bitcast<i32>(aux[params.aux_base + w.b * params.n_s + w.s]);
        if slot < 0 {
            return NOT_CACHED;
        }
        at = u32(slot);
    } else {
        at = lane_positions(w, 0u);
    }
    if at >= params.cache_len {
        return PAST_CACHE;
    }
    return w.b * params.cache_stride_b + at * params.cache_stride_p;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let w = work_item(wid, lid);
    if !w.valid {
        return;
    }
    let e = owned_elements(w.g);
    let cs = angle(w);
    let tail = w.g >= params.half;
    let row = row_start(w);
    for (var h = 0u; h < params.n_h; h++) {
        let q = rotate(load2(VIEW_A, row + h * params.stride_h, e), cs);
        if Q_OUT {
            store2(VIEW_B, row_start2(w) + h * params.stride2_h, e, q);
        } else if !tail {
            store2(VIEW_A, row + h * params.stride_h, e, q);
        }
    }
    let c = cache_row(w);
    if c == PAST_CACHE {
        atomicOr(&flag[params.flag_base], 1u);
    }
    if c == PAST_CACHE || c == NOT_CACHED {
        return;
    }
    for (var h = 0u; h < params.n_h2; h++) {
        let at = c + h * params.cache_stride_h;
        let k = row + (params.n_h + h) * params.stride_h;
        store_cache2(KC, params.k_base + at, e, rotate(load2(VIEW_A, k, e), cs));
        let v = row + (params.n_h + params.n_h2 + h) * params.stride_h;
        store_cache2(VC, params.v_base + at, e, load2(VIEW_A, v, e));
    }
}
