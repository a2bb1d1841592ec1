// bf16 storage, four elements (two words) at a time: ld4/st4 take an element index that is
// a multiple of 4. ld1/st1 serve the out-of-place tail copy, whose shares start on even
// elements, so no two invocations write the same word.
// View A is binding 1 (`x`), view B binding 5 (`x2`): K in place, or the source out of
// place. With SHARED both views are windows of one buffer bound once, as `x`. Every access
// names its view; `v` is a constant at each call, so the branch folds away.

#import common
#import dtype/bf16

@group(0) @binding(1) var<storage, read_write> x: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read_write> x2: array<vec2<u32>>;

fn ld_words(v: u32, i: u32) -> vec2<u32> {
    if v == VIEW_A || SHARED {
        return x[i];
    }
    return x2[i];
}

fn st_words(v: u32, i: u32, words: vec2<u32>) {
    if v == VIEW_A || SHARED {
        x[i] = words;
    } else {
        x2[i] = words;
    }
}

fn ld4(v: u32, e: u32) -> vec4<f32> {
    let w = ld_words(v, e >> 2u);
    return vec4<f32>(bf16_value(w.x, 0u), bf16_value(w.x, 1u), bf16_value(w.y, 0u), bf16_value(w.y, 1u));
}

fn st4(v: u32, e: u32, val: vec4<f32>) {
    st_words(v, e >> 2u, vec2<u32>(bf16_pack(val.x, val.y), bf16_pack(val.z, val.w)));
}

fn ld1(v: u32, e: u32) -> f32 {
    return bf16_value(ld_words(v, e >> 2u)[(e >> 1u) & 1u], e & 1u);
}

// Read-modify-write of the word pair: safe because no other invocation writes these words.
fn st1(v: u32, e: u32, val: f32) {
    let k = (e >> 1u) & 1u;
    let shift = (e & 1u) * 16u;
    var words = ld_words(v, e >> 2u);
    words[k] = (words[k] & ~(0xffffu << shift)) | (bf16_bits(val) << shift);
    st_words(v, e >> 2u, words);
}
