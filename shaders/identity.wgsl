// The roofline: an in-place identity over a range of vec4 words, every word read once and
// written back unchanged. It moves the bytes the pair kernels move (read once, write once)
// through the same path (storage binding, 64-thread workgroups, 2-D grid folding), with no
// arithmetic, so its rate is what a memory-bound kernel can reach on the adapter.
//
// Shape: the range is cut into PLANES equal planes of 64-byte lines (4 words) and a tail of
// fewer than PLANES lines and 4 words. Invocation i moves line i of every plane, as a pair
// kernel moves the same pairs of every head, and the tail's line and word i if there are. Each word is loaded
// and stored before the next is loaded: on CPU drivers (Mesa lavapipe / llvmpipe), where an
// invocation's accesses are scalar loops over SIMD lanes, this order and whole lines per
// invocation measured fastest (about 2x one vec4 per invocation).

struct Params {
    // Index in `x` of the first word of the range.
    base: u32,
    // Words in the range.
    count: u32,
    // Workgroups along x.
    grid_x: u32,
    // Zero. XOR-ed into every word so that the compiler cannot prove that the store writes
    // back what it loaded and drop both.
    mask: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> x: array<vec4<u32>>;

const WORKGROUP: u32 = 64u;
// Planes per range; the host dispatches max(ceil(lines / PLANES), 4) invocations.
const PLANES: u32 = 4u;

// Loads and stores the four words of the line starting at word e.
fn move_line(e: u32) {
    let m = vec4<u32>(params.mask);
    x[e] = x[e] ^ m;
    x[e + 1u] = x[e + 1u] ^ m;
    x[e + 2u] = x[e + 2u] ^ m;
    x[e + 3u] = x[e + 3u] ^ m;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    // Dispatches wider than 65 535 workgroups fold into y: linearize (x, y) back.
    let i = (wid.y * params.grid_x + wid.x) * WORKGROUP + lid;
    let lines = params.count / 4u;
    let plane = lines / PLANES;
    if i < plane {
        var e = params.base + 4u * i;
        for (var k = 0u; k < PLANES; k++) {
            move_line(e);
            e += 4u * plane;
        }
    }
    // The tail: lines [PLANES * plane, lines), one per invocation.
    if i < lines - PLANES * plane {
        move_line(params.base + 4u * (PLANES * plane + i));
    }
    // The last words, fewer than a line.
    if i < params.count % 4u {
        let e = params.base + 4u * lines + i;
        x[e] = x[e] ^ vec4<u32>(params.mask);
    }
}
