// One pair per invocation, either pair layout: rotate and add through load_pairs and
// store_pairs.

#import common
#import width

// Rotates the pair of group g by (c, s): (a, b) -> (a c - b s, a s + b c).
fn rotate_pairs(v: u32, e0: u32, g: u32, c: FV, s: FV) {
    let p = load_pairs(v, e0, g);
    store_pairs(v, e0, g, Pairs(p.a * c - p.b * s, p.a * s + p.b * c));
}

// x = x * scale + v for the pair of group g.
fn add_pairs(v: u32, e0: u32, g: u32, scale: f32, pe: Pairs) {
    let p = load_pairs(v, e0, g);
    store_pairs(v, e0, g, Pairs(p.a * scale + pe.a, p.b * scale + pe.b));
}
