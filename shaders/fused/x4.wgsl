// The fused kernel's accesses of four pairs per lane group: the tail as groups of eight
// elements (two vec4), and pairs stored into the cache where the pair layout puts them.

#import fused/cache

// Group g of the tail: elements r + 8 (g - r/8) to the next seven.
fn tail_element(g: u32) -> u32 {
    return 2u * params.half + 8u * (g - params.half / 4u);
}

fn load_tail(v: u32, e0: u32, g: u32) -> Pairs {
    let e = e0 + tail_element(g);
    return Pairs(ld4(v, e), ld4(v, e + 4u));
}

fn store_tail(v: u32, e0: u32, g: u32, p: Pairs) {
    let e = e0 + tail_element(g);
    st4(v, e, p.a);
    st4(v, e + 4u, p.b);
}

fn store_cache_tail(c: u32, e0: u32, g: u32, p: Pairs) {
    let e = e0 + tail_element(g);
    st_cache4(c, e, p.a);
    st_cache4(c, e + 4u, p.b);
}

fn store_cache_pairs(c: u32, e0: u32, g: u32, p: Pairs) {
#ifdef interleaved
    st_cache4(c, e0 + 8u * g, vec4(p.a.x, p.b.x, p.a.y, p.b.y));
    st_cache4(c, e0 + 8u * g + 4u, vec4(p.a.z, p.b.z, p.a.w, p.b.w));
#else
    st_cache4(c, e0 + 4u * g, p.a);
    st_cache4(c, e0 + 4u * g + params.half, p.b);
#endif
}
