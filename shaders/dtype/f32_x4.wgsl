// f32 storage, accessed as vec4: ld4/st4 take an element index that is a multiple of 4.
@group(0) @binding({B}) var<storage, read_write> x{S}: array<vec4<f32>>;

fn ld4{S}(e: u32) -> vec4<f32> {
    return x{S}[e >> 2u];
}

fn st4{S}(e: u32, v: vec4<f32>) {
    x{S}[e >> 2u] = v;
}

fn ld1{S}(e: u32) -> f32 {
    return x{S}[e >> 2u][e & 3u];
}

fn st1{S}(e: u32, v: f32) {
    x{S}[e >> 2u][e & 3u] = v;
}
