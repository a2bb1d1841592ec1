// One pair per invocation: scalars.

alias FV = f32;
alias UV = u32;
alias IV = i32;

// Pair index of each lane of group g.
fn lanes(g: u32) -> UV {
    return g;
}

// Pairs per lane group.
const LANES: u32 = 1u;

// The value of the first lane.
fn first_lane(v: UV) -> u32 {
    return v;
}
