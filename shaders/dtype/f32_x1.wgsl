// f32 storage, one element at a time.
// View A is binding 1 (`x`), view B binding 5 (`x2`): K in place, or the source out of
// place. With SHARED both views are windows of one buffer bound once, as `x`. Every access
// names its view; `v` is a constant at each call, so the branch folds away.

#import common

@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(5) var<storage, read_write> x2: array<f32>;

fn ld1(v: u32, e: u32) -> f32 {
    if v == VIEW_A || SHARED {
        return x[e];
    }
    return x2[e];
}

fn st1(v: u32, e: u32, val: f32) {
    if v == VIEW_A || SHARED {
        x[e] = val;
    } else {
        x2[e] = val;
    }
}
