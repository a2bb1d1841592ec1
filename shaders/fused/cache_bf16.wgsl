// A bf16 KV cache: the 16-bit halves of u32 words. One element at a time, the halves of one
// word may belong to two invocations, so each store replaces its own half with atomic
// and/or; four at a time (offsets and strides multiples of 4) an invocation owns two whole
// words and stores them.

#import fused/cache
#import dtype/bf16

@group(0) @binding(9) var<storage, read_write> k_cache: array<atomic<u32>>;
@group(0) @binding(10) var<storage, read_write> v_cache: array<atomic<u32>>;

#ifdef x4
fn st_cache4(c: u32, e: u32, val: vec4<f32>) {
    let w = e >> 1u;
    if c == KC {
        atomicStore(&k_cache[w], bf16_pack(val.x, val.y));
        atomicStore(&k_cache[w + 1u], bf16_pack(val.z, val.w));
    } else {
        atomicStore(&v_cache[w], bf16_pack(val.x, val.y));
        atomicStore(&v_cache[w + 1u], bf16_pack(val.z, val.w));
    }
}
#else
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
#endif
