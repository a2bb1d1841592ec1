// f32 storage, one element at a time.
@group(0) @binding({B}) var<storage, read_write> x{S}: array<f32>;

fn ld1{S}(e: u32) -> f32 {
    return x{S}[e];
}

fn st1{S}(e: u32, v: f32) {
    x{S}[e] = v;
}
