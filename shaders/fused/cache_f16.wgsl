// An f16 KV cache (needs SHADER_F16): values rounded to the nearest f16.

#import fused/cache

@group(0) @binding(9) var<storage, read_write> k_cache: array<f16>;
@group(0) @binding(10) var<storage, read_write> v_cache: array<f16>;

fn st_cache(c: u32, e: u32, val: f32) {
    if c == KC {
        k_cache[e] = f16(val);
    } else {
        v_cache[e] = f16(val);
    }
}
