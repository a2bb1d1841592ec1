// The exported functions with the storage binding of a spec's frequency words
// (`wgpu_posenc::wgsl::rope_functions_with_binding` puts your group and binding numbers in
// place of the ones below).

#import export/rope

@group(0) @binding(0) var<storage, read> angle_words: array<vec2<u32>>;

// vec2(cos, sin) of pair `j` at position `p`.
fn rope_pair_cos_sin(p: u32, j: u32) -> vec2<f32> {
    return rope_cos_sin(p, angle_words[j]);
}
