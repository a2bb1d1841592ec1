// Interleaved pairs (2j, 2j + 1), one pair per invocation: group g is elements 2g and 2g + 1.

#import common
#import dtype
#import pairs/rotate_x1

fn load_pairs(v: u32, e0: u32, g: u32) -> Pairs {
    return Pairs(ld1(v, e0 + 2u * g), ld1(v, e0 + 2u * g + 1u));
}

fn store_pairs(v: u32, e0: u32, g: u32, p: Pairs) {
    st1(v, e0 + 2u * g, p.a);
    st1(v, e0 + 2u * g + 1u, p.b);
}

// Into another buffer: where store_pairs puts them, or with PAIR_HALVES at lanes g and
// g + r/2.
fn store_out_pairs(v: u32, e0: u32, g: u32, p: Pairs) {
    if PAIR_HALVES {
        st1(v, e0 + g, p.a);
        st1(v, e0 + g + params.half, p.b);
    } else {
        store_pairs(v, e0, g, p);
    }
}
