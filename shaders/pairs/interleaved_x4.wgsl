// Interleaved pairs (2j, 2j + 1), four pairs per invocation: group g is the eight elements
// [8g, 8g + 8) of the row, two vec4 accesses.
fn load_pairs{S}(e0: u32, g: u32) -> Pairs {
    let lo = ld4{S}(e0 + 8u * g);
    let hi = ld4{S}(e0 + 8u * g + 4u);
    return Pairs(vec4(lo.x, lo.z, hi.x, hi.z), vec4(lo.y, lo.w, hi.y, hi.w));
}

fn store_pairs{S}(e0: u32, g: u32, p: Pairs) {
    st4{S}(e0 + 8u * g, vec4(p.a.x, p.b.x, p.a.y, p.b.y));
    st4{S}(e0 + 8u * g + 4u, vec4(p.a.z, p.b.z, p.a.w, p.b.w));
}
