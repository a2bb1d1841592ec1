// The cos/sin cache read at one pair index.

#import common

fn gather_cos(i: UV) -> FV {
    return cos_cache[i];
}

fn gather_sin(i: UV) -> FV {
    return sin_cache[i];
}
