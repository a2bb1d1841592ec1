// The crate's exact RoPE angle for your own kernels (`wgpu_posenc::wgsl`). In the exported
// text every name declared here and in what it imports is prefixed `posenc_`
// (`posenc_rope_cos_sin`, `posenc_turns`, ...), so it can sit beside any kernel's own.
//
// A pair's frequency is two u32 words `f = vec2(low, high)` of `F = round(f / 2pi * 2^64)`
// revolutions per position (`RopeSpec::angle_words` packs them, the inverse rotation
// included); the angle at position `p` is `p * F mod 2^64`, exact for every u32 `p`.

#import trig

// vec2(cos, sin) of the angle of a pair with frequency words `f` at position `p`, within
// 1.5e-7 of the real-number value (multiply by the attention factor where the scaling has
// one).
fn rope_cos_sin(p: u32, f: vec2<u32>) -> vec2<f32> {
    let sc = sincos_turns(turns(p, f.x, f.y));
    return vec2(sc.c, sc.s);
}

// The pair `x = (x0, x1)` rotated by `cs = (cos a, sin a)`:
// (x0 cos a - x1 sin a, x0 sin a + x1 cos a).
fn rope_rotate(x: vec2<f32>, cs: vec2<f32>) -> vec2<f32> {
    return vec2(x.x * cs.x - x.y * cs.y, x.x * cs.y + x.y * cs.x);
}
