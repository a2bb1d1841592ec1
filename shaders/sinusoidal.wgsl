// Sinusoidal positional encoding: each pair (sin slot, cos slot) of a row at position p gets
// (sin(p w_i), cos(p w_i)). With ADD, the rows are embeddings: x = x * scale + PE.
// The pair layout decides the slots: interleaved (2i, 2i+1) or concatenated (i, i + d/2).
// With PAD, the row of position pad_pos is zero (fairseq's padding index).

// False: write the table. True: fused add into the embeddings in place.
override ADD: bool = false;
override PAD: bool = false;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let w = work_item(wid, lid);
    if !w.valid {
        return;
    }
    let p = group_positions(w);
    let sc = angles_at(p, w.g);
    var pe = Pairs(sc.s, sc.c);
    if PAD {
        let zero = p == UV(params.pad_pos);
        pe = Pairs(select(pe.a, FV(0.0), zero), select(pe.b, FV(0.0), zero));
    }
    var e = row_start(w);
    for (var h = 0u; h < params.n_h; h++) {
        if ADD {
            let x = load_pairs(e, w.g);
            store_pairs(e, w.g, Pairs(x.a * params.scale + pe.a, x.b * params.scale + pe.b));
        } else {
            store_pairs(e, w.g, pe);
        }
        e += params.stride_h;
    }
}
