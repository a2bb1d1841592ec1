// One pair per invocation: scalars.

#import common

alias FV = f32;
alias UV = u32;
alias IV = i32;

// Pair index of each lane of group g.
fn lanes(g: u32) -> UV {
    return g;
}

fn gather_cos(i: UV) -> FV {
    return cos_cache[i];
}

fn gather_sin(i: UV) -> FV {
    return sin_cache[i];
}
