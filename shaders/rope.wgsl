// RoPE: every pair (x0, x1) of the first r elements of each row becomes
// (x0 cos a - x1 sin a, x0 sin a + x1 cos a), a = position * frequency of the pair.
// In place, elements [r, head_dim) and everything outside the views are never written; out
// of place, the tail is copied from the source.

#ifdef f16
enable f16;
#endif
#import common
#import dtype
#import pairs

// 0: view A only, in place. 1: view B too (K), in place, same angles. 2: out of place,
// view B the source and view A the destination.
override SECOND: u32 = 0u;

// cos and sin of the G angles of pair group g, times the attention factor, sin negated for
// the inverse rotation.
struct Rotation {
    c: FV,
    s: FV,
}

// Cos and sin rounded to bf16 (RopeSpec::cos_sin_bf16), to nearest even, as HF's rotary
// modules return them in a bf16 model's dtype.
override COS_SIN_BF16: bool = false;

fn bf16_rounded(x: FV) -> FV {
    let b = bitcast<UV>(x);
    return bitcast<FV>((b + UV(0x7fffu) + ((b >> UV(16u)) & UV(1u))) & UV(0xffff0000u));
}

// cos and sin times the attention factor (sin negated for the inverse), rounded if asked.
fn scaled(c: FV, s: FV) -> Rotation {
    let r = Rotation(c * params.scale, s * (params.scale * params.sin_sign));
    if COS_SIN_BF16 {
        return Rotation(bf16_rounded(r.c), bf16_rounded(r.s));
    }
    return r;
}

fn rotation(w: Work, g: u32) -> Rotation {
    if POOL > 1u {
        return pooled_rotation(w, g);
    }
    let sc = angles_at(group_positions(w, g), g);
    return scaled(sc.c, sc.s);
}

// Position sets a token (RopeSpec::pooled): cos and sin are their means. The sets are
// `[POOL, planes, batch, seq]`, each as one set of position axes.
override POOL: u32 = 1u;

// Cos and sin of pair group g summed over position sets j and j + 1.
fn pooled_pair(w: Work, g: u32, j: u32) -> SinCos {
    let stride = select(3u, 4u, AXES4) * params.axis_stride;
    let i = params.ids_base + w.b * params.ids_stride_b + w.s + j * stride;
    let axis = freq[3u * g + 2u] & UV(3u);
    let x = angles_at(plane_positions(i, axis), g);
    let y = angles_at(plane_positions(i + stride, axis), g);
    return SinCos(x.s + y.s, x.c + y.c);
}

// The mean over the POOL sets, summed in pairs and the pairs in pairs: a token whose sets
// repeat one position sums to exactly POOL times its cos and sin.
fn pooled_rotation(w: Work, g: u32) -> Rotation {
    var t = pooled_pair(w, g, 0u);
    if POOL >= 4u {
        let u = pooled_pair(w, g, 2u);
        t = SinCos(t.s + u.s, t.c + u.c);
    }
    if POOL == 8u {
        let a = pooled_pair(w, g, 4u);
        let b = pooled_pair(w, g, 6u);
        t = SinCos(t.s + (a.s + b.s), t.c + (a.c + b.c));
    }
    let mean = FV(1.0 / f32(POOL));
    return scaled(t.c * mean, t.s * mean);
}

// A caller's table (RopeSpec::learned): the angle of pair group g in head h (the view's,
// from the block's first `h0`) is the sum over the DENSE axes of the axis's position times
// the table's frequency, summed in fixed-point revolutions; the third word of each entry is
// its sign and, for f32 positions, its whole revolutions (`sign | W << 1`).
fn dense_rotation(w: Work, g: u32, h: u32) -> Rotation {
    var u = UV(0u);
    var bad = UV(0u);
    for (var a = 0u; a < DENSE; a++) {
        let i = 3u * g + a * params.dense_axis + h * params.dense_head;
        let p = lane_positions(w, UV(a));
        var t: UV;
        if POS_MODE == 5u || POS_MODE == 6u {
            let f = float_turns(p, freq[i], freq[i + 1u], freq[i + 2u] >> UV(1u));
            t = f.u;
            bad |= f.bad;
        } else {
            t = turns(p, freq[i], freq[i + 1u]);
        }
        u += select(t, UV(0u) - t, (freq[i + 2u] & UV(1u)) != UV(0u));
    }
    let sc = sincos_turns(u);
    // A quiet NaN made at run time where a position is out of range.
    let nan = bitcast<FV>(bad | UV(0x7fc00000u));
    let out = bad != UV(0u);
    return scaled(select(sc.c, nan, out), select(sc.s, nan, out));
}

// The rotation of pair group g in head h of a view whose block starts at head h0: the spec's
// (the same in every head), or the table's.
fn head_rotation(w: Work, g: u32, h0: u32, h: u32, spec: Rotation) -> Rotation {
    if DENSE == 0u {
        return spec;
    }
    return dense_rotation(w, g, h0 + h);
}

// Out of place: copy this invocation's share of the tail [r, head_dim) of a row.
fn copy_tail(e: u32, e2: u32, k: u32) {
    let r = 2u * params.half;
    let lo = r + k * params.tail_chunk;
    let hi = min(lo + params.tail_chunk, r + params.tail);
    for (var i = lo; i < hi; i++) {
        st1(VIEW_A, e + i, ld1(VIEW_B, e2 + i));
    }
}

// Each element of a pair at its own angle (RopeSpec::table_layout: a model's table laid out
// for the other pair layout): the first elements by the row's pair groups' frequencies, the
// second by the `params.groups` groups after them. Set with one group an invocation.
override LANE_ANGLES: bool = false;

// Turns pair group g of the row at e of view v: the first elements by ra, the second by rb
// (rb is ra but where LANE_ANGLES is set).
fn turn(v: u32, e: u32, g: u32, ra: Rotation, rb: Rotation) {
    if LANE_ANGLES {
        let p = load_pairs(v, e, g);
        store_pairs(v, e, g, Pairs(p.a * ra.c - p.b * ra.s, p.a * rb.s + p.b * rb.c));
        return;
    }
    rotate_pairs(v, e, g, ra.c, ra.s);
}

// The rotation of a pair's second element: the table layout's (LANE_ANGLES), else the pair's.
fn second_rotation(ra: Rotation, q: Rotation) -> Rotation {
    if LANE_ANGLES {
        return q;
    }
    return ra;
}

// Out of place: turn pair group g of the source row at e2 into the destination row at e.
fn rotate_into(e: u32, e2: u32, g: u32, ra: Rotation, rb: Rotation) {
    let p = load_pairs(VIEW_B, e2, g);
    store_out_pairs(VIEW_A, e, g, Pairs(p.a * ra.c - p.b * ra.s, p.a * rb.s + p.b * rb.c));
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let w = work_item(wid, lid);
    if !w.valid {
        return;
    }
    let g0 = w.g * params.span;
    var r0 = Rotation(FV(1.0), FV(0.0));
    if DENSE == 0u {
        r0 = rotation(w, g0);
    }
    // `span` is uniform: every invocation takes the same branch. Two groups per head visit
    // give each lane twice the bytes between head steps, which lets CPU drivers stream
    // (measured 1.2x to 1.5x over one group).
    let two = params.span == 2u;
    var r1 = r0;
    if two && DENSE == 0u {
        r1 = rotation(w, g0 + 1u);
    }
    // The second elements' rotation (LANE_ANGLES), else the pair's.
    var q0 = r0;
    if LANE_ANGLES {
        q0 = rotation(w, g0 + params.groups);
    }
    var e = row_start(w);
    var e2 = row_start2(w);
    for (var h = 0u; h < params.n_h; h++) {
        let ra = head_rotation(w, g0, params.dense_h0, h, r0);
        var rb = r1;
        if two {
            rb = head_rotation(w, g0 + 1u, params.dense_h0, h, r1);
        }
        if SECOND == 2u {
            rotate_into(e, e2, g0, ra, second_rotation(ra, q0));
            if two {
                rotate_into(e, e2, g0 + 1u, rb, rb);
            }
            copy_tail(e, e2, w.g);
            e2 += params.stride2_h;
        } else {
            turn(VIEW_A, e, g0, ra, q0);
            if two {
                rotate_pairs(VIEW_A, e, g0 + 1u, rb.c, rb.s);
            }
        }
        e += params.stride_h;
    }
    if SECOND == 1u {
        for (var h = 0u; h < params.n_h2; h++) {
            let ra = head_rotation(w, g0, params.dense_h0_b, h, r0);
            var rb = r1;
            if two {
                rb = head_rotation(w, g0 + 1u, params.dense_h0_b, h, r1);
            }
            turn(VIEW_B, e2, g0, ra, q0);
            if two {
                rotate_pairs(VIEW_B, e2, g0 + 1u, rb.c, rb.s);
            }
            e2 += params.stride2_h;
        }
    }
}
