// The cos/sin cache read at the pair indices of four lanes.

#import common

fn gather_cos(i: UV) -> FV {
    return FV(cos_cache[i.x], cos_cache[i.y], cos_cache[i.z], cos_cache[i.w]);
}

fn gather_sin(i: UV) -> FV {
    return FV(sin_cache[i.x], sin_cache[i.y], sin_cache[i.z], sin_cache[i.w]);
}
