// Half-split pairs (j, j + r/2), one pair per invocation: group g is elements g and g + r/2.
fn load_pairs{S}(e0: u32, g: u32) -> Pairs {
    return Pairs(ld1{S}(e0 + g), ld1{S}(e0 + g + params.half));
}

fn store_pairs{S}(e0: u32, g: u32, p: Pairs) {
    st1{S}(e0 + g, p.a);
    st1{S}(e0 + g + params.half, p.b);
}
