// f16 storage (needs SHADER_F16), one element at a time. Arithmetic stays in f32.
@group(0) @binding({B}) var<storage, read_write> x{S}: array<f16>;

fn ld1{S}(e: u32) -> f32 {
    return f32(x{S}[e]);
}

fn st1{S}(e: u32, v: f32) {
    x{S}[e] = f16(v);
}
