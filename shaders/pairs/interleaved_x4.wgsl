// Interleaved pairs (2j, 2j + 1), four pairs per invocation: group g is the eight elements
// [8g, 8g + 8) of the row, two vec4 accesses.

#import common
#import dtype
#import width

fn load_pairs(v: u32, e0: u32, g: u32) -> Pairs {
    let lo = ld4(v, e0 + 8u * g);
    let hi = ld4(v, e0 + 8u * g + 4u);
    return Pairs(vec4(lo.x, lo.z, hi.x, hi.z), vec4(lo.y, lo.w, hi.y, hi.w));
}

fn store_pairs(v: u32, e0: u32, g: u32, p: Pairs) {
    st4(v, e0 + 8u * g, vec4(p.a.x, p.b.x, p.a.y, p.b.y));
    st4(v, e0 + 8u * g + 4u, vec4(p.a.z, p.b.z, p.a.w, p.b.w));
}

// Into another buffer: where store_pairs puts them, or with PAIR_HALVES the four first
// elements at lanes [4g, 4g + 4) and the four second ones r/2 further (r/2 is a multiple of
// four where this width runs).
fn store_out_pairs(v: u32, e0: u32, g: u32, p: Pairs) {
    if PAIR_HALVES {
        st4(v, e0 + 4u * g, p.a);
        st4(v, e0 + 4u * g + params.half, p.b);
    } else {
        store_pairs(v, e0, g, p);
    }
}

// Rotates the four pairs of group g by (c, s): (a, b) -> (a c - b s, a s + b c). Each vec4
// holds two whole pairs, so each is stored right after it is loaded: on CPU drivers, whose
// loads and stores are scalar loops over the SIMD lanes, this order streams (measured 1.2x
// to 2.5x over loading both before storing either).
fn rotate_pairs(v: u32, e0: u32, g: u32, c: FV, s: FV) {
    let e = e0 + 8u * g;
    let lo = ld4(v, e);
    st4(v, e, lo * vec4(c.x, c.x, c.y, c.y) + vec4(-lo.y, lo.x, -lo.w, lo.z) * vec4(s.x, s.x, s.y, s.y));
    let hi = ld4(v, e + 4u);
    st4(v, e + 4u, hi * vec4(c.z, c.z, c.w, c.w) + vec4(-hi.y, hi.x, -hi.w, hi.z) * vec4(s.z, s.z, s.w, s.w));
}

// x = x * scale + v for the pairs of group g. Each vec4 is loaded and stored before the next
// (see `rotate_pairs`).
fn add_pairs(v: u32, e0: u32, g: u32, scale: f32, pe: Pairs) {
    let e = e0 + 8u * g;
    st4(v, e, ld4(v, e) * scale + vec4(pe.a.x, pe.b.x, pe.a.y, pe.b.y));
    st4(v, e + 4u, ld4(v, e + 4u) * scale + vec4(pe.a.z, pe.b.z, pe.a.w, pe.b.w));
}
