// f16 storage (needs SHADER_F16), accessed as vec4: element index e is a multiple of 4.
// Arithmetic stays in f32; stores round to the nearest f16.
@group(0) @binding(1) var<storage, read_write> x: array<vec4<f16>>;

fn ld4(e: u32) -> vec4<f32> {
    return vec4<f32>(x[e >> 2u]);
}

fn st4(e: u32, v: vec4<f32>) {
    x[e >> 2u] = vec4<f16>(v);
}
