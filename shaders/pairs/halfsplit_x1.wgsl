// Half-split pairs (j, j + r/2), one pair per invocation: group g is elements g and g + r/2.

#import common
#import dtype
#import pairs/rotate_x1

fn load_pairs(v: u32, e0: u32, g: u32) -> Pairs {
    return Pairs(ld1(v, e0 + g), ld1(v, e0 + g + params.half));
}

fn store_pairs(v: u32, e0: u32, g: u32, p: Pairs) {
    st1(v, e0 + g, p.a);
    st1(v, e0 + g + params.half, p.b);
}

// Into another buffer: half-split pairs are already in PairHalves order.
fn store_out_pairs(v: u32, e0: u32, g: u32, p: Pairs) {
    store_pairs(v, e0, g, p);
}
