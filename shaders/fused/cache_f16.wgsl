// An f16 KV cache (needs SHADER_F16): values rounded to the nearest f16; with four pairs per
// invocation as vec4 (offsets and strides multiples of 4).

#import fused/cache

#ifdef x4
@group(0) @binding(9) var<storage, read_write> k_cache: array<vec4<f16>>;
@group(0) @binding(10) var<storage, read_write> v_cache: array<vec4<f16>>;

fn st_cache4(c: u32, e: u32, val: vec4<f32>) {
    if c == KC {
        k_cache[e >> 2u] = vec4<f16>(val);
    } else {
        v_cache[e >> 2u] = vec4<f16>(val);
    }
}
#else
@group(0) @binding(9) var<storage, read_write> k_cache: array<f16>;
@group(0) @binding(10) var<storage, read_write> v_cache: array<f16>;

fn st_cache(c: u32, e: u32, val: f32) {
    if c == KC {
        k_cache[e] = f16(val);
    } else {
        v_cache[e] = f16(val);
    }
}
#endif
