// The fused kernel's accesses of four pairs per lane group: a lane group's elements (`ldv`,
// `stv`, `st_cachev`: four, one vec4), and pairs stored into the cache where the pair layout
// puts them.

#import fused/cache

fn ldv(v: u32, e: u32) -> FV {
    return ld4(v, e);
}

fn stv(v: u32, e: u32, x: FV) {
    st4(v, e, x);
}

fn st_cachev(c: u32, e: u32, x: FV) {
    st_cache4(c, e, x);
}

// The four pairs' first elements at lanes [4g, 4g + 4), their second ones r/2 further
// (PAIR_HALVES).
fn store_cache_halves(c: u32, e0: u32, g: u32, p: Pairs) {
    st_cache4(c, e0 + 4u * g, p.a);
    st_cache4(c, e0 + 4u * g + params.half, p.b);
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
