// bf16 storage, one element at a time. Neighbouring elements share a word and may belong to
// other invocations, so each store replaces its own half with atomic and/or.
// View A is binding 1 (`x`), view B binding 5 (`x2`): K in place, or the source out of
// place. With SHARED both views are windows of one buffer bound once, as `x`. Every access
// names its view; `v` is a constant at each call, so the branch folds away.

#import common
#import dtype/bf16

@group(0) @binding(1) var<storage, read_write> x: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> x2: array<atomic<u32>>;

fn ld1(v: u32, e: u32) -> f32 {
    if v == VIEW_A || SHARED {
        return bf16_value(atomicLoad(&x[e >> 1u]), e & 1u);
    }
    return bf16_value(atomicLoad(&x2[e >> 1u]), e & 1u);
}

fn st1(v: u32, e: u32, val: f32) {
    let shift = (e & 1u) * 16u;
    let keep = ~(0xffffu << shift);
    let bits = bf16_bits(val) << shift;
    if v == VIEW_A || SHARED {
        atomicAnd(&x[e >> 1u], keep);
        atomicOr(&x[e >> 1u], bits);
    } else {
        atomicAnd(&x2[e >> 1u], keep);
        atomicOr(&x2[e >> 1u], bits);
    }
}
