// The fused kernel's accesses of one pair per lane group: the tail as element pairs, and
// pairs stored into the cache where the pair layout puts them.

#import fused/cache

// Group g of the tail: elements r + 2 (g - r/2) and the next.
fn tail_element(g: u32) -> u32 {
    return 2u * params.half + 2u * (g - params.half);
}

fn load_tail(v: u32, e0: u32, g: u32) -> Pairs {
    let e = e0 + tail_element(g);
    return Pairs(ld1(v, e), ld1(v, e + 1u));
}

fn store_tail(v: u32, e0: u32, g: u32, p: Pairs) {
    let e = e0 + tail_element(g);
    st1(v, e, p.a);
    st1(v, e + 1u, p.b);
}

fn store_cache_tail(c: u32, e0: u32, g: u32, p: Pairs) {
    let e = e0 + tail_element(g);
    st_cache(c, e, p.a);
    st_cache(c, e + 1u, p.b);
}

fn store_cache_pairs(c: u32, e0: u32, g: u32, p: Pairs) {
#ifdef interleaved
    st_cache(c, e0 + 2u * g, p.a);
    st_cache(c, e0 + 2u * g + 1u, p.b);
#else
    st_cache(c, e0 + g, p.a);
    st_cache(c, e0 + g + params.half, p.b);
#endif
}
