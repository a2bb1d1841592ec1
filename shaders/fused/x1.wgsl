// The fused kernel's accesses of one pair per lane group: a lane group's elements (`ldv`,
// `stv`, `st_cachev`: one), and pairs stored into the cache where the pair layout puts them.

#import fused/cache

fn ldv(v: u32, e: u32) -> FV {
    return ld1(v, e);
}

fn stv(v: u32, e: u32, x: FV) {
    st1(v, e, x);
}

fn st_cachev(c: u32, e: u32, x: FV) {
    st_cache(c, e, x);
}

// Pair g's elements at lanes g and g + r/2 (PAIR_HALVES).
fn store_cache_halves(c: u32, e0: u32, g: u32, p: Pairs) {
    st_cache(c, e0 + g, p.a);
    st_cache(c, e0 + g + params.half, p.b);
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
