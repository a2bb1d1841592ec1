// bfloat16 as the 16-bit halves of u32 words: element e is the low half of word e / 2 when
// e is even, the high half when odd (little-endian, as bf16 arrays are laid out in memory).

// The bf16 bits of v, rounded to nearest even; NaN stays a (quiet) NaN.
fn bf16_bits(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    if (b & 0x7fffffffu) > 0x7f800000u {
        return (b >> 16u) | 0x40u;
    }
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

// The value of the low (upper == 0) or high half of a word.
fn bf16_value(word: u32, upper: u32) -> f32 {
    return bitcast<f32>(select(word << 16u, word & 0xffff0000u, upper == 1u));
}

fn bf16_pack(lo: f32, hi: f32) -> u32 {
    return bf16_bits(lo) | (bf16_bits(hi) << 16u);
}
