// An f32 KV cache: K at binding 9, V at binding 10; with four pairs per invocation as vec4
// (the host binds it so only where its offsets and strides are multiples of 4).

#import fused/cache

#ifdef x4
@group(0) @binding(9) var<storage, read_write> k_cache: array<vec4<f32>>;
@group(0) @binding(10) var<storage, read_write> v_cache: array<vec4<f32>>;

fn st_cache4(c: u32, e: u32, val: vec4<f32>) {
    if c == KC {
        k_cache[e >> 2u] = val;
    } else {
        v_cache[e >> 2u] = val;
    }
}
#else
@group(0) @binding(9) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(10) var<storage, read_write> v_cache: array<f32>;

fn st_cache(c: u32, e: u32, val: f32) {
    if c == KC {
        k_cache[e] = val;
    } else {
        v_cache[e] = val;
    }
}
#endif
