// f32 storage, one element at a time.
@group(0) @binding(1) var<storage, read_write> x: array<f32>;

fn ld1(e: u32) -> f32 {
    return x[e];
}

fn st1(e: u32, v: f32) {
    x[e] = v;
}
