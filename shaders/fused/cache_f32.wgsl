// An f32 KV cache.

#import fused/cache

@group(0) @binding(9) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(10) var<storage, read_write> v_cache: array<f32>;

fn st_cache(c: u32, e: u32, val: f32) {
    if c == KC {
        k_cache[e] = val;
    } else {
        v_cache[e] = val;
    }
}
