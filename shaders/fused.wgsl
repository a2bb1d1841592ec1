// Fused attention preprocessing, one dispatch: from the packed projection output
// `qkv [batch, q_heads + 2 kv_heads, seq, head_dim]` (view A, binding `x`), Q rotated in place
// or into view B (`x2`), K rotated and V copied into the KV cache at each token's position
// or slot.
//
// One invocation owns one (token, lane group g): for g below r / 2 / LANES the spec's pair
// group g (`load_pairs`), rotated in every Q and K head with one angle per lane; above, a
// group of 2 * LANES tail elements, copied. The pair groups and the tail groups cover each
// head's elements once, so V is copied by the same invocations.
//
// With QK-norm (`norm_main`) each head's root mean square is needed before any of its
// elements is stored, so the lane groups of one token go to T = `params.groups`
// invocations of one workgroup (a power of two dividing it), each owning one or two
// (`span`) lane groups: an invocation loads its groups of a head once into registers and
// sums their squares, the token's invocations add their sums in a fixed order
// (`token_sum`: through workgroup memory with one barrier per head, or, in the `subgroups`
// variant, where the adapter's smallest subgroup holds the T invocations, by subgroup
// shuffles without a barrier), and each then stores its groups normalized and rotated.
// Every element is read from memory once per call, the norm's factors once per invocation,
// and since all loads of a head come before the sum and all stores after it, Q can be
// rewritten in place.

#ifdef f16
enable f16;
#else
#ifdef cache_f16
enable f16;
#endif
#endif
#ifdef subgroups
enable subgroups;
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
// `1 + w`); see `norm_main`.
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

// The norm's factors of lane group g (`k`: K's, else Q's), as the lanes of `load_group`.
fn factors(k: bool, g: u32) -> Pairs {
    let heads = select(0u, 2u * params.norm_groups, k);
    // The factors follow the frequencies' three entries per rotated lane group; K's follow
    // Q's, a head's worth later.
    let at = 3u * (params.half / LANES) + heads + 2u * g;
    return Pairs(bitcast<FV>(freq[at]), bitcast<FV>(freq[at + 1u]));
}

// A lane group normalized: times its head's 1 / rms and its factors `f`.
fn normed(p: Pairs, inv: f32, f: Pairs) -> Pairs {
    return Pairs(p.a * inv * f.a, p.b * inv * f.b);
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

// Lane group g of the Q head at `at`: rotated in place, or into the Q head at `out`.
fn q_group(at: u32, out: u32, g: u32, t: Turn) {
    if t.tail {
        if Q_OUT {
            store_tail(VIEW_B, out, g, load_tail(VIEW_A, at, g));
        }
    } else if Q_OUT {
        store_out_pairs(VIEW_B, out, g, turned(load_pairs(VIEW_A, at, g), t.c, t.s));
    } else {
        rotate_pairs(VIEW_A, at, g, t.c, t.s);
    }
}

// Lane group g of the K and V heads at `k` and `v` into the caches at element `at`.
fn kv_group(k: u32, v: u32, at: u32, g: u32, t: Turn) {
    store_cache_group(KC, params.k_base + at, g, turned_by(load_group(VIEW_A, k, g), t));
    store_cache_group(VC, params.v_base + at, g, load_group(VIEW_A, v, g));
}

// Lane group g of the head at `e0` of view `v`: a pair group, or a tail group.
fn load_group(v: u32, e0: u32, g: u32) -> Pairs {
    if g >= params.half / LANES {
        return load_tail(v, e0, g);
    }
    return load_pairs(v, e0, g);
}

// Lane group g into the head at `e0` of view `v`, where `load_group` read it (a rotated Q
// into `q_out` in PAIR_HALVES order when set: Q is then never in place).
fn store_group(v: u32, e0: u32, g: u32, p: Pairs) {
    if g >= params.half / LANES {
        store_tail(v, e0, g, p);
    } else {
        store_out_pairs(v, e0, g, p);
    }
}

// The same into cache `c` at element `e0` (K in PAIR_HALVES order when set; V as read).
fn store_cache_group(c: u32, e0: u32, g: u32, p: Pairs) {
    if g >= params.half / LANES {
        store_cache_tail(c, e0, g, p);
    } else if PAIR_HALVES && c == KC {
        store_cache_halves(c, e0, g, p);
    } else {
        store_cache_pairs(c, e0, g, p);
    }
}

// `p` rotated by `t` (unchanged for a tail group).
fn turned_by(p: Pairs, t: Turn) -> Pairs {
    if t.tail {
        return p;
    }
    return turned(p, t.c, t.s);
}

// Invocations of a workgroup: 64, or with QK-norm those of one token (T).
override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if QK_NORM {
        norm_main(wid, lid);
        return;
    }
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
        q_group(at, to, g0, t0);
        if two {
            q_group(at, to, g0 + 1u, t1);
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
        kv_group(k, v, at, g0, t0);
        if two {
            kv_group(k, v, at, g0 + 1u, t1);
        }
    }
}

#ifdef subgroups
// The sum of `own` over the token's T invocations (the workgroup, one subgroup: T is at most
// the adapter's smallest subgroup size) by a butterfly: at each step an invocation adds the
// value of the one whose subgroup index differs in one bit, from bit T / 2 down to bit 1.
// Partners add the same two values (a + b = b + a in floating point), so every invocation
// ends with the same total, in the same order on every run, and no barrier is needed.
fn token_sum(own: f32, h: u32, lid: u32, lane: u32, threads: u32) -> f32 {
    var total = own;
    for (var bit = threads / 2u; bit > 0u; bit /= 2u) {
        total += subgroupShuffleXor(total, bit);
    }
    return total;
}
#else
// Each invocation's sum of squares of its groups of a head, in two halves used by
// alternate heads, so that one barrier a head orders both the writes and the reads.
var<workgroup> norm_partial: array<f32, 128>;

// The sum of `own` over the token's T invocations, through workgroup memory: one barrier a
// head (alternate heads use alternate halves, so the next head's writes cannot overtake
// this one's reads), then each invocation adds the T sums in the order of their lanes, so
// that every invocation of the token gets the same total.
fn token_sum(own: f32, h: u32, lid: u32, lane: u32, threads: u32) -> f32 {
    let side = (h & 1u) * WORKGROUP;
    norm_partial[side + lid] = own;
    workgroupBarrier();
    var total = 0.0;
    let first = side + lid - lane;
    for (var j = 0u; j < threads; j++) {
        total += norm_partial[first + j];
    }
    return total;
}
#endif

fn squares(p: Pairs) -> f32 {
#ifdef x4
    return dot(p.a, p.a) + dot(p.b, p.b);
#else
    return p.a * p.a + p.b * p.b;
#endif
}

// A token's lane groups g0 and, with span 2, g0 + 1 of one head (b unused with span 1).
struct Span {
    a: Pairs,
    b: Pairs,
}

// The span of the head at `e0` of view `v` (zeros where the invocation is not `live`).
fn load_span(v: u32, e0: u32, g0: u32, two: bool, live: bool) -> Span {
    var s = Span(Pairs(FV(0.0), FV(0.0)), Pairs(FV(0.0), FV(0.0)));
    if live {
        s.a = load_group(v, e0, g0);
        if two {
            s.b = load_group(v, e0, g0 + 1u);
        }
    }
    return s;
}

fn store_span(v: u32, e0: u32, g0: u32, two: bool, s: Span) {
    store_group(v, e0, g0, s.a);
    if two {
        store_group(v, e0, g0 + 1u, s.b);
    }
}

fn store_cache_span(c: u32, e0: u32, g0: u32, two: bool, s: Span) {
    store_cache_group(c, e0, g0, s.a);
    if two {
        store_cache_group(c, e0, g0 + 1u, s.b);
    }
}

// The norm's factors of the span (`k`: K's, else Q's).
fn span_factors(k: bool, g0: u32, two: bool) -> Span {
    var f = Span(factors(k, g0), Pairs(FV(0.0), FV(0.0)));
    if two {
        f.b = factors(k, g0 + 1u);
    }
    return f;
}

// Head `h` (of the Q and K heads, in order) of a span: its token's sum of squares taken
// (`token_sum`, by every invocation of the token), then normalized with the factors `f`
// and rotated by `t0` and `t1`.
fn norm_span(s: Span, h: u32, lid: u32, lane: u32, f: Span, t0: Turn, t1: Turn) -> Span {
    let total = token_sum(squares(s.a) + squares(s.b), h, lid, lane, params.groups);
    let inv_d = 1.0 / f32(2u * LANES * params.norm_groups);
    let inv = inverseSqrt(total * inv_d + params.norm_eps);
    return Span(turned_by(normed(s.a, inv, f.a), t0), turned_by(normed(s.b, inv, f.b), t1));
}

// QK-norm: `params.groups` (T) invocations, a workgroup, own one token; the one of index
// `lane` among them owns lane groups `lane span` and, with span 2, the next (see the file's
// head). The groups are held in named registers (`Span`), never in an indexed array:
// drivers keep those in memory, and on lavapipe that alone made the kernel 4x slower than
// the identity shader. Every invocation of a token runs every `token_sum` (a barrier or
// subgroup shuffles: uniform control flow), and stores only where it is `live`.
fn norm_main(wid: vec3<u32>, lid: u32) {
    let i = (wid.y * params.grid_x + wid.x) * WG + lid;
    let threads = params.groups;
    let t = i / threads;
    let lane = i % threads;
    let two = params.span == 2u;
    let g0 = lane * params.span;
    // Past the block, or a lane past the head's groups (T is rounded up to a power of
    // two): no loads or stores, but every sum.
    let live = i < params.total && g0 < params.norm_groups;
    let w = Work(live, t / max(params.n_s, 1u), t % max(params.n_s, 1u), 0u);
    var t0 = Turn(true, FV(1.0), FV(0.0));
    var t1 = t0;
    var cached = NOT_CACHED;
    if live {
        t0 = turn_of(w, g0);
        if two {
            t1 = turn_of(w, g0 + 1u);
        }
        cached = cache_row(w);
        if cached == PAST_CACHE {
            atomicOr(&flag[params.flag_base], 1u);
        }
    }
    let row = row_start(w);
    // Q heads: in place, or into view B.
    let fq = span_factors(false, g0, two);
    let out = row_start2(w);
    for (var h = 0u; h < params.n_h; h++) {
        let at = row + h * params.stride_h;
        let q = norm_span(load_span(VIEW_A, at, g0, two, live), h, lid, lane, fq, t0, t1);
        if live && Q_OUT {
            store_span(VIEW_B, out + h * params.stride2_h, g0, two, q);
        } else if live {
            store_span(VIEW_A, at, g0, two, q);
        }
    }
    // K heads into the K cache, and V as it is into the V cache.
    let stores_kv = live && cached != PAST_CACHE && cached != NOT_CACHED;
    let fk = span_factors(true, g0, two);
    for (var h = 0u; h < params.n_h2; h++) {
        let at = row + (params.n_h + h) * params.stride_h;
        let k = norm_span(load_span(VIEW_A, at, g0, two, live), params.n_h + h, lid, lane, fk, t0, t1);
        if stores_kv {
            let c = cached + h * params.cache_stride_h;
            store_cache_span(KC, params.k_base + c, g0, two, k);
            let v = at + params.n_h2 * params.stride_h;
            store_cache_span(VC, params.v_base + c, g0, two, load_span(VIEW_A, v, g0, two, true));
        }
    }
}
