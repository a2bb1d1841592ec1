// Half-split pairs (j, j + r/2), one pair per invocation: group g is elements g and g + r/2.

#import common
#import dtype
#import pairs/rotate_x1

// The first element of pair g in a row, and the distance to its second (in blocks, see
// BLOCKS in shaders/pairs.wgsl).
fn first_of(g: u32) -> u32 {
    if BLOCKS {
        return g + (g / params.block) * params.block;
    }
    return g;
}

fn partner() -> u32 {
    return select(params.half, params.block, BLOCKS);
}

fn load_pairs(v: u32, e0: u32, g: u32) -> Pairs {
    let e = e0 + first_of(g);
    return Pairs(ld1(v, e), ld1(v, e + partner()));
}

fn store_pairs(v: u32, e0: u32, g: u32, p: Pairs) {
    let e = e0 + first_of(g);
    st1(v, e, p.a);
    st1(v, e + partner(), p.b);
}

// Into another buffer: half-split pairs are already in PairHalves order.
fn store_out_pairs(v: u32, e0: u32, g: u32, p: Pairs) {
    store_pairs(v, e0, g, p);
}
