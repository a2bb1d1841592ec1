// A bf16 KV cache: the 16-bit halves of u32 words. The halves of one word may belong to two
// invocations, so each store replaces its own half with atomic and/or.

#import fused/cache
#import dtype/bf16

@group(0) @binding(9) var<storage, read_write> k_cache: array<atomic<u32>>;
@group(0) @binding(10) var<storage, read_write> v_cache: array<atomic<u32>>;

fn st_cache(c: u32, e: u32, val: f32) {
    let shift = (e & 1u) * 16u;
    let keep = ~(0xffffu << shift);
    let bits = bf16_bits(val) << shift;
    if c == KC {
        atomicAnd(&k_cache[e >> 1u], keep);
        atomicOr(&k_cache[e >> 1u], bits);
    } else {
        atomicAnd(&v_cache[e >> 1u], keep);
        atomicOr(&v_cache[e >> 1u], bits);
    }
}
