// f16 storage (needs SHADER_F16), accessed as vec4: ld4/st4 take an element index that is
// a multiple of 4. Arithmetic stays in f32; stores round to the nearest f16.
@group(0) @binding({B}) var<storage, read_write> x{S}: array<vec4<f16>>;

fn ld4{S}(e: u32) -> vec4<f32> {
    return vec4<f32>(x{S}[e >> 2u]);
}

fn st4{S}(e: u32, v: vec4<f32>) {
    x{S}[e >> 2u] = vec4<f16>(v);
}

fn ld1{S}(e: u32) -> f32 {
    return f32(x{S}[e >> 2u][e & 3u]);
}

fn st1{S}(e: u32, v: f32) {
    x{S}[e >> 2u][e & 3u] = f16(v);
}
