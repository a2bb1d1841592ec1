// RoPE: every pair (x0, x1) of the first r elements of each row becomes
// (x0 cos a - x1 sin a, x0 sin a + x1 cos a), a = position * frequency of the pair.
// In place, elements [r, head_dim) and everything outside the views are never written; out
// of place, the tail is copied from the source.

// 0: view A only, in place. 1: view B too (K), in place, same angles. 2: out of place,
// view B the source and view A the destination.
override SECOND: u32 = 0u;

fn rotate(p: Pairs, c: FV, s: FV) -> Pairs {
    return Pairs(p.a * c - p.b * s, p.a * s + p.b * c);
}

// Out of place: copy this invocation's share of the tail [r, head_dim) of a row.
fn copy_tail(e: u32, e2: u32, g: u32) {
    let r = 2u * params.half;
    let lo = r + g * params.tail_chunk;
    let hi = min(lo + params.tail_chunk, r + params.tail);
    for (var k = lo; k < hi; k++) {
        st1(e + k, ld1_2(e2 + k));
    }
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let w = work_item(wid, lid);
    if !w.valid {
        return;
    }
    let sc = angles_at(group_positions(w), w.g);
    let c = sc.c * params.scale;
    let s = sc.s * (params.scale * params.sin_sign);
    var e = row_start(w);
    var e2 = row_start2(w);
    for (var h = 0u; h < params.n_h; h++) {
        if SECOND == 2u {
            store_pairs(e, w.g, rotate(load_pairs_2(e2, w.g), c, s));
            copy_tail(e, e2, w.g);
            e2 += params.stride2_h;
        } else {
            store_pairs(e, w.g, rotate(load_pairs(e, w.g), c, s));
        }
        e += params.stride_h;
    }
    if SECOND == 1u {
        for (var h = 0u; h < params.n_h2; h++) {
            store_pairs_2(e2, w.g, rotate(load_pairs_2(e2, w.g), c, s));
            e2 += params.stride2_h;
        }
    }
}
