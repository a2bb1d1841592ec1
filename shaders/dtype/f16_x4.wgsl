// f16 storage (needs SHADER_F16), accessed as vec4: ld4/st4 take an element index that is
// a multiple of 4. Arithmetic stays in f32; stores round to the nearest f16.
// View A is binding 1 (`x`), view B binding 5 (`x2`): K in place, or the source out of
// place. With SHARED both views are windows of one buffer bound once, as `x`. Every access
// names its view; `v` is a constant at each call, so the branch folds away.

#import common

@group(0) @binding(1) var<storage, read_write> x: array<vec4<f16>>;
@group(0) @binding(5) var<storage, read_write> x2: array<vec4<f16>>;

fn ld4(v: u32, e: u32) -> vec4<f32> {
    if v == VIEW_A || SHARED {
        return vec4<f32>(x[e >> 2u]);
    }
    return vec4<f32>(x2[e >> 2u]);
}

fn st4(v: u32, e: u32, val: vec4<f32>) {
    if v == VIEW_A || SHARED {
        x[e >> 2u] = vec4<f16>(val);
    } else {
        x2[e >> 2u] = vec4<f16>(val);
    }
}

fn ld1(v: u32, e: u32) -> f32 {
    if v == VIEW_A || SHARED {
        return f32(x[e >> 2u][e & 3u]);
    }
    return f32(x2[e >> 2u][e & 3u]);
}

fn st1(v: u32, e: u32, val: f32) {
    if v == VIEW_A || SHARED {
        x[e >> 2u][e & 3u] = f16(val);
    } else {
        x2[e >> 2u][e & 3u] = f16(val);
    }
}
