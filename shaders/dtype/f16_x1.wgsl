// f16 storage (needs SHADER_F16), one element at a time. Arithmetic stays in f32.
// View A is binding 1 (`x`), view B binding 5 (`x2`): K in place, or the source out of
// place. With SHARED both views are windows of one buffer bound once, as `x`. Every access
// names its view; `v` is a constant at each call, so the branch folds away.

#import common

@group(0) @binding(1) var<storage, read_write> x: array<f16>;
@group(0) @binding(5) var<storage, read_write> x2: array<f16>;

fn ld1(v: u32, e: u32) -> f32 {
    if v == VIEW_A || SHARED {
        return f32(x[e]);
    }
    return f32(x2[e]);
}

fn st1(v: u32, e: u32, val: f32) {
    if v == VIEW_A || SHARED {
        x[e] = f16(val);
    } else {
        x2[e] = f16(val);
    }
}
