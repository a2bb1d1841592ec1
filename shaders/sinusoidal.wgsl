// Sinusoidal positional encoding: each pair (sin slot, cos slot) of a row at position p gets
// (sin(p w_i), cos(p w_i)). With ADD, the rows are embeddings: x = x * scale + PE.
// The pair layout decides the slots: interleaved (2i, 2i+1) or concatenated (i, i + d/2).

// False: write the table. True: fused add into the embeddings in place.
override ADD: bool = false;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let w = work_item(wid, lid);
    if !w.valid {
        return;
    }
    let sc = group_angles(params.pos_start + w.s, w.g);
    var e = row_start(w);
    for (var h = 0u; h < params.n_h; h++) {
        if ADD {
            let p = load_pairs(e, w.g);
            store_pairs(e, w.g, Pairs(p.a * params.scale + sc.s, p.b * params.scale + sc.c));
        } else {
            store_pairs(e, w.g, Pairs(sc.s, sc.c));
        }
        e += params.stride_h;
    }
}
