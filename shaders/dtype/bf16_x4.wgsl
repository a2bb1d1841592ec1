// bf16 storage, four elements (two words) at a time: ld4/st4 take an element index that is
// a multiple of 4. ld1/st1 serve the out-of-place tail copy, whose shares start on even
// elements, so no two invocations write the same word.
@group(0) @binding({B}) var<storage, read_write> x{S}: array<vec2<u32>>;

fn ld4{S}(e: u32) -> vec4<f32> {
    let w = x{S}[e >> 2u];
    return vec4<f32>(bf16_value(w.x, 0u), bf16_value(w.x, 1u), bf16_value(w.y, 0u), bf16_value(w.y, 1u));
}

fn st4{S}(e: u32, v: vec4<f32>) {
    x{S}[e >> 2u] = vec2<u32>(bf16_pack(v.x, v.y), bf16_pack(v.z, v.w));
}

fn ld1{S}(e: u32) -> f32 {
    return bf16_value(x{S}[e >> 2u][(e >> 1u) & 1u], e & 1u);
}

fn st1{S}(e: u32, v: f32) {
    let k = (e >> 1u) & 1u;
    let shift = (e & 1u) * 16u;
    let old = x{S}[e >> 2u][k];
    x{S}[e >> 2u][k] = (old & ~(0xffffu << shift)) | (bf16_bits(v) << shift);
}
