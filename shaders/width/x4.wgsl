// Four consecutive pairs per invocation: vec4 lanes.

alias FV = vec4<f32>;
alias UV = vec4<u32>;
alias IV = vec4<i32>;

// Pair index of each lane of group g.
fn lanes(g: u32) -> UV {
    return UV(4u * g) + UV(0u, 1u, 2u, 3u);
}

// Pairs per lane group.
const LANES: u32 = 4u;

// The value of the first lane.
fn first_lane(v: UV) -> u32 {
    return v.x;
}
