// Four consecutive pairs per invocation: vec4 lanes.

#import common
#import dtype

alias FV = vec4<f32>;
alias UV = vec4<u32>;
alias IV = vec4<i32>;

// Pair index of each lane of group g.
fn lanes(g: u32) -> UV {
    return UV(4u * g) + UV(0u, 1u, 2u, 3u);
}

fn gather_cos(i: UV) -> FV {
    return FV(cos_cache[i.x], cos_cache[i.y], cos_cache[i.z], cos_cache[i.w]);
}

fn gather_sin(i: UV) -> FV {
    return FV(sin_cache[i.x], sin_cache[i.y], sin_cache[i.z], sin_cache[i.w]);
}
