// Half-split pairs (j, j + r/2), four pairs per invocation: group g is elements [4g, 4g + 4)
// and the same four of the second half, one vec4 access each.

#import common
#import dtype
#import width

// The first element of group g's four pairs in a row, and the distance to their second
// elements (in blocks of a multiple of 4 pairs, see BLOCKS in shaders/pairs.wgsl).
fn first_of(g: u32) -> u32 {
    let j = 4u * g;
    if BLOCKS {
        return j + (j / params.block) * params.block;
    }
    return j;
}

fn partner() -> u32 {
    return select(params.half, params.block, BLOCKS);
}

fn load_pairs(v: u32, e0: u32, g: u32) -> Pairs {
    return Pairs(ld4(v, e0 + first_of(g)), ld4(v, e0 + first_of(g) + partner()));
}

fn store_pairs(v: u32, e0: u32, g: u32, p: Pairs) {
    st4(v, e0 + first_of(g), p.a);
    st4(v, e0 + first_of(g) + partner(), p.b);
}

// Into another buffer: half-split pairs are already in PairHalves order.
fn store_out_pairs(v: u32, e0: u32, g: u32, p: Pairs) {
    store_pairs(v, e0, g, p);
}

// Rotates the four pairs of group g by (c, s): (a, b) -> (a c - b s, a s + b c). Both halves
// are needed before either is stored; storing the second half first measured fastest over
// both tensor layouts on CPU drivers.
fn rotate_pairs(v: u32, e0: u32, g: u32, c: FV, s: FV) {
    let ea = e0 + first_of(g);
    let eb = ea + partner();
    let a = ld4(v, ea);
    let b = ld4(v, eb);
    st4(v, eb, a * s + b * c);
    st4(v, ea, a * c - b * s);
}

// x = x * scale + v for the pairs of group g. The halves do not depend on each other: each
// is loaded and stored before the other (see `rotate_pairs`).
fn add_pairs(v: u32, e0: u32, g: u32, scale: f32, pe: Pairs) {
    let ea = e0 + first_of(g);
    st4(v, ea, ld4(v, ea) * scale + pe.a);
    let eb = ea + partner();
    st4(v, eb, ld4(v, eb) * scale + pe.b);
}
