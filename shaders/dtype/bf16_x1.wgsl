// bf16 storage, one element at a time. Neighbouring elements share a word and may belong to
// other invocations, so each store replaces its own half with atomic and/or.
@group(0) @binding({B}) var<storage, read_write> x{S}: array<atomic<u32>>;

fn ld1{S}(e: u32) -> f32 {
    return bf16_value(atomicLoad(&x{S}[e >> 1u]), e & 1u);
}

fn st1{S}(e: u32, v: f32) {
    let shift = (e & 1u) * 16u;
    atomicAnd(&x{S}[e >> 1u], ~(0xffffu << shift));
    atomicOr(&x{S}[e >> 1u], bf16_bits(v) << shift);
}
