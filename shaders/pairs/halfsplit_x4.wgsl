// Half-split pairs (j, j + r/2), four pairs per invocation: group g is elements [4g, 4g + 4)
// and the same four of the second half, one vec4 access each.
fn load_pairs{S}(e0: u32, g: u32) -> Pairs {
    return Pairs(ld4{S}(e0 + 4u * g), ld4{S}(e0 + 4u * g + params.half));
}

fn store_pairs{S}(e0: u32, g: u32, p: Pairs) {
    st4{S}(e0 + 4u * g, p.a);
    st4{S}(e0 + 4u * g + params.half, p.b);
}
