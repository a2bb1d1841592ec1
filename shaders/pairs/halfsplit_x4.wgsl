// Half-split pairs (j, j + r/2), four pairs per invocation: group g is elements [4g, 4g + 4)
// and the same four of the second half, one vec4 access each.
fn load_pairs{S}(e0: u32, g: u32) -> Pairs {
    return Pairs(ld4{S}(e0 + 4u * g), ld4{S}(e0 + 4u * g + params.half));
}

fn store_pairs{S}(e0: u32, g: u32, p: Pairs) {
    st4{S}(e0 + 4u * g, p.a);
    st4{S}(e0 + 4u * g + params.half, p.b);
}

// Rotates the four pairs of group g by (c, s): (a, b) -> (a c - b s, a s + b c). Both halves
// are needed before either is stored; storing the second half first measured fastest over
// both tensor layouts on CPU drivers.
fn rotate_pairs{S}(e0: u32, g: u32, c: FV, s: FV) {
    let ea = e0 + 4u * g;
    let eb = ea + params.half;
    let a = ld4{S}(ea);
    let b = ld4{S}(eb);
    st4{S}(eb, a * s + b * c);
    st4{S}(ea, a * c - b * s);
}

// x = x * scale + v for the pairs of group g. The halves do not depend on each other: each
// is loaded and stored before the other (see `rotate_pairs`).
fn add_pairs{S}(e0: u32, g: u32, scale: f32, v: Pairs) {
    let ea = e0 + 4u * g;
    st4{S}(ea, ld4{S}(ea) * scale + v.a);
    let eb = ea + params.half;
    st4{S}(eb, ld4{S}(eb) * scale + v.b);
}
