// RoPE in place: every pair (x0, x1) of the first r elements of each row becomes
// (x0 cos a - x1 sin a, x0 sin a + x1 cos a), a = position * frequency of the pair.
// Elements [r, head_dim) and everything outside the view are never written.

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let w = work_item(wid, lid);
    if !w.valid {
        return;
    }
    let sc = group_angles(position(w.b, w.s), w.g);
    let c = sc.c * params.scale;
    let s = sc.s * (params.scale * params.sin_sign);
    var e = row_start(w);
    for (var h = 0u; h < params.n_h; h++) {
        let p = load_pairs(e, w.g);
        store_pairs(e, w.g, Pairs(p.a * c - p.b * s, p.a * s + p.b * c));
        e += params.stride_h;
    }
}
