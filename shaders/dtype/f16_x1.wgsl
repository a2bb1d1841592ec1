// f16 storage (needs SHADER_F16), one element at a time. Arithmetic stays in f32.
@group(0) @binding(1) var<storage, read_write> x: array<f16>;

fn ld1(e: u32) -> f32 {
    return f32(x[e]);
}

fn st1(e: u32, v: f32) {
    x[e] = f16(v);
}
