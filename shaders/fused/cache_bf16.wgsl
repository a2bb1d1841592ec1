// A bf16 KV cache: the 16-bit halves of u32 words. One element at a time, the halves of one
// word may belong to two invocations, and with duplicate slots or positions the same half to
// two tokens: each store replaces its own half in one compare-exchange, so the word always
// holds one whole value per half (a clear then an OR could interleave with another token's
// and leave the OR of both). Four at a time (offsets and strides multiples of 4) an
// invocation owns two whole words and stores them.

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
// `old` with its half `e & 1` replaced by val's bf16 bits.
fn bf16_with_half(old: u32, e: u32, val: f32) -> u32 {
    let shift = (e & 1u) * 16u;
    return (old & ~(0xffffu << shift)) | (bf16_bits(val) << shift);
}

fn st_cache(c: u32, e: u32, val: f32) {
    let w = e >> 1u;
    if c == KC {
        var old = atomicLoad(&k_cache[w]);
        loop {
            let r = atomicCompareExchangeWeak(&k_cache[w], old, bf16_with_half(old, e, val));
            if r.exchanged {
                break;
            }
            old = r.old_value;
        }
    } else {
        var old = atomicLoad(&v_cache[w]);
        loop {
            let r = atomicCompareExchangeWeak(&v_cache[w], old, bf16_with_half(old, e, val));
            if r.exchanged {
                break;
            }
            old = r.old_value;
        }
    }
}
#endif
