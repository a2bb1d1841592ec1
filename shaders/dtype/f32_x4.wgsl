// f32 storage, accessed as vec4: element index e is a multiple of 4.
@group(0) @binding(1) var<storage, read_write> x: array<vec4<f32>>;

fn ld4(e: u32) -> vec4<f32> {
    return x[e >> 2u];
}

fn st4(e: u32, v: vec4<f32>) {
    x[e >> 2u] = v;
}
