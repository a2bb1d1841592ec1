// Sinusoidal positional encoding: each pair (sin slot, cos slot) of a row at position p gets
// (sin(p w_i), cos(p w_i)). With ADD, the rows are embeddings: x = x * scale + PE.
// The pair layout decides the slots: interleaved (2i, 2i+1) or concatenated (i, i + d/2).
// With PAD, the row of position pad_pos is zero (fairseq's padding index). With FLIP the cos
// goes in a pair's first slot (diffusers' flip_sin_to_cos). A row of odd width ends with one
// element past the pairs (`tail`): zero in the table, scaled by the add.
// Positions are u32, or f32 with POS_MODE 5 (diffusion timesteps, coordinates).
//
// With one row per token there is no head to share an angle with, so every pair costs a
// sin/cos: with contiguous positions an invocation owns `tokens` consecutive tokens, loads
// its groups' frequencies once and steps their angles from token to token with an exact
// 64-bit add (see `next_position`), which leaves the polynomial as the only per-pair cost.

#ifdef f16
enable f16;
#endif
#import common
#import pairs
#import trig

// False: write the table. True: fused add into the embeddings in place.
override ADD: bool = false;
override PAD: bool = false;
override FLIP: bool = false;

// Writes (or adds) the encoding `sc` of pair group g into the row that starts at e, in every
// head; zero where the position is the padding index.
fn apply(e0: u32, g: u32, p: UV, sc: SinCos) {
    var pe = Pairs(select(sc.s, sc.c, FLIP), select(sc.c, sc.s, FLIP));
    if PAD {
        let zero = p == UV(params.pad_pos);
        pe = Pairs(select(pe.a, FV(0.0), zero), select(pe.b, FV(0.0), zero));
    }
    var e = e0;
    for (var h = 0u; h < params.n_h; h++) {
        if ADD {
            add_pairs(VIEW_A, e, g, params.scale, pe);
        } else {
            store_pairs(VIEW_A, e, g, pe);
        }
        e += params.stride_h;
    }
}

// The angles of pair group g at lane positions `p`, whose revolutions are `r`: from `r` for
// u32 positions, from the f32 position itself otherwise (the third frequency word holds the
// whole revolutions then).
fn sincos_of(r: Revolutions, p: UV, g: u32) -> SinCos {
    if POS_MODE == 5u {
        return float_sincos(p, r.f_lo, r.f_hi, freq[3u * g + 2u]);
    }
    return sincos_turns(r.hi);
}

// The element past the pairs of a row of odd width, in every head: 0, or x * scale.
fn apply_tail(e0: u32) {
    // After the pairs: an odd row is never vec4, so one pair per invocation.
    var e = e0 + params.half + params.groups * params.span;
    for (var h = 0u; h < params.n_h; h++) {
        if ADD {
            st1(VIEW_A, e, ld1(VIEW_A, e) * params.scale);
        } else {
            st1(VIEW_A, e, 0.0);
        }
        e += params.stride_h;
    }
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let w = work_item(wid, lid);
    if !w.valid {
        return;
    }
    let end = min(w.s + params.tokens, params.n_s);
    let g0 = w.g * params.span;
    // `span` is uniform: every invocation takes the same branch. Two groups per token give
    // each lane 64 contiguous bytes per row (measured 1.1x to 1.2x on CPU drivers).
    let two = params.span == 2u;
    var row = row_start(w);
    // The third frequency word is no M-RoPE axis here: positions of axis 0.
    var p0 = lane_positions(w, UV(0u));
    var p1 = p0;
    var r0 = group_revolutions(p0, g0);
    var r1 = group_revolutions(p1, g0 + select(0u, 1u, two));
    // The last invocation of a token writes its tail.
    let tail = params.tail != 0u && w.g + 1u == params.groups;
    for (var s = w.s; s < end; s++) {
        apply(row, g0, p0, sincos_of(r0, p0, g0));
        if two {
            apply(row, g0 + 1u, p1, sincos_of(r1, p1, g0 + 1u));
        }
        if tail {
            apply_tail(row);
        }
        // Only contiguous positions have more than one token per invocation: the next
        // token's angles are these plus one frequency.
        r0 = next_position(r0);
        r1 = next_position(r1);
        p0 += UV(1u);
        p1 += UV(1u);
        row += params.stride_s;
    }
}
