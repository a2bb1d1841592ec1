// Exact angle reduction and polynomial sincos, shared by every kernel.
//
// `UV`, `IV` and `FV` are u32/i32/f32 or their vec4 forms (set by the prelude), so one body
// serves a single pair or four pairs per invocation. The WGSL built-ins for sine and cosine
// are not used: they are only specified to 2^-11 inside [-pi, pi] and differ between drivers.
//
// An angle is carried as a fraction of a revolution in 32-bit fixed point. The host stores
// each frequency as revolutions per position in 64-bit fixed point (`F = round(f / 2pi * 2^64)`,
// two u32 words); `p * F mod 2^64` is formed exactly in integers, whatever the size of p.

#import width

// High 32 bits of the 64-bit product a * b, from 16-bit halves (WGSL has no 64-bit integers).
fn mul_hi(a: UV, b: UV) -> UV {
    let a_lo = a & UV(0xffffu);
    let a_hi = a >> UV(16u);
    let b_lo = b & UV(0xffffu);
    let b_hi = b >> UV(16u);
    let ll = a_lo * b_lo;
    let lh = a_lo * b_hi;
    let hl = a_hi * b_lo;
    let hh = a_hi * b_hi;
    // Bits 16..48 of the product: each addend < 2^16 + 2^16 + 2^16, so no overflow.
    let mid = (ll >> UV(16u)) + (lh & UV(0xffffu)) + (hl & UV(0xffffu));
    return hh + (lh >> UV(16u)) + (hl >> UV(16u)) + (mid >> UV(16u));
}

// Top 32 bits of the revolution fraction of p * F, F = f_hi * 2^32 + f_lo.
// p * f_hi * 2^32 keeps only its low word below 2^64, and wrapping u32 arithmetic is that word.
fn turns(p: UV, f_lo: UV, f_hi: UV) -> UV {
    return mul_hi(p, f_lo) + p * f_hi;
}

struct SinCos {
    s: FV,
    c: FV,
}

// Bits [s, s + 32) of the 128-bit number (w3, w2, w1, w0), for s >= 0 (zero past its top).
fn bits_at(w0: UV, w1: UV, w2: UV, w3: UV, s: UV) -> UV {
    let i = s >> UV(5u);
    let k = s & UV(31u);
    let z = UV(0u);
    let low = select(select(select(select(z, w3, i == UV(3u)), w2, i == UV(2u)), w1, i == UV(1u)),
        w0, i == UV(0u));
    let high = select(select(select(z, w3, i == UV(2u)), w2, i == UV(1u)), w1, i == UV(0u));
    // A shift by 32 - k is only taken for k > 0.
    return (low >> k) | select(z, high << ((UV(32u) - k) & UV(31u)), k != z);
}

// Sine and cosine of an f32 position (`bits`) times the frequency W * 2^64 + F, F = f_hi *
// 2^32 + f_lo (revolutions per position in 64-bit fixed point, W its whole revolutions),
// exact like `turns`: the position is m * 2^e with a 24-bit integer m, so the revolutions are
// m * (W 2^64 + F) * 2^e; the fraction's top 32 bits are bits [32 - e, 64 - e) of the
// 120-bit product, formed exactly in 32-bit words.
// |p| >= 2^32, infinities and NaN give NaN (the host refuses them where it sees them).
fn float_sincos(bits: UV, f_lo: UV, f_hi: UV, whole: UV) -> SinCos {
    let sc = sincos_turns(float_fraction(bits, f_lo, f_hi, whole));
    // sin(-a) = -sin(a), cos(-a) = cos(a).
    let negative = (bits >> UV(31u)) != UV(0u);
    // A quiet NaN made at run time (a NaN constant is a shader-creation error in WGSL).
    let nan = bitcast<FV>(bits | UV(0x7fc00000u));
    let bad = ((bits >> UV(23u)) & UV(0xffu)) >= UV(159u);
    return SinCos(
        select(select(sc.s, -sc.s, negative), nan, bad),
        select(sc.c, nan, bad),
    );
}

// The signed revolutions of `float_sincos`'s angle as a fraction in 32-bit fixed point
// (negated for a negative position), for sums of angles (RopeSpec::learned); `bad` is 1 where
// |p| >= 2^32, an infinity or NaN.
struct FloatTurns {
    u: UV,
    bad: UV,
}

fn float_turns(bits: UV, f_lo: UV, f_hi: UV, whole: UV) -> FloatTurns {
    let u = float_fraction(bits, f_lo, f_hi, whole);
    let negative = (bits >> UV(31u)) != UV(0u);
    let bad = ((bits >> UV(23u)) & UV(0xffu)) >= UV(159u);
    return FloatTurns(select(u, UV(0u) - u, negative), select(UV(0u), UV(1u), bad));
}

// The top 32 bits of the revolution fraction of |p| (W 2^64 + F) for the f32 position `bits`.
fn float_fraction(bits: UV, f_lo: UV, f_hi: UV, whole: UV) -> UV {
    let biased = (bits >> UV(23u)) & UV(0xffu);
    let m = (bits & UV(0x7fffffu)) | select(UV(0u), UV(0x800000u), biased != UV(0u));
    // m * F = (w2, w1, w0), then m * W added from bit 64 up.
    let w0 = m * f_lo;
    let t1 = m * f_hi;
    let w1 = mul_hi(m, f_lo) + t1;
    let w2a = mul_hi(m, f_hi) + select(UV(0u), UV(1u), w1 < t1);
    let mw = m * whole;
    let w2 = w2a + mw;
    let w3 = mul_hi(m, whole) + select(UV(0u), UV(1u), w2 < mw);
    // e = max(biased, 1) - 150; below 2^32, biased <= 158, so 32 - e >= 24.
    return bits_at(w0, w1, w2, w3, UV(182u) - max(biased, UV(1u)));
}

// Sine and cosine of `u` / 2^32 revolutions, within 1.5e-7 absolute of the exact value.
fn sincos_turns(u: UV) -> SinCos {
    // Round to the nearest quarter turn: q is that quadrant, r the rest in [-2^29, 2^29)
    // (quarter turns scaled by 2^30). The add wraps, taking quadrant 4 back to 0.
    let v = u + UV(0x20000000u);
    let q = v >> UV(30u);
    let r = bitcast<IV>(v & UV(0x3fffffffu)) - IV(0x20000000);
    // t in [-1/2, 1/2) quarter turns; the angle of the polynomials is t * pi / 2.
    let t = FV(r) * 9.313225746154785e-10;
    let z = t * t;
    // Near-minimax polynomials for sin(pi t / 2) and cos(pi t / 2) on [-1/2, 1/2]
    // (fit error 2e-12 and 5e-11; f32 evaluation error below 9e-8).
    let s = t * (1.5707963705062866 + z * (-0.6459640860557556 + z * (0.07969255745410919
        + z * (-0.004681141581386328 + z * 0.00015798446838743985))));
    let c = 1.0 + z * (-1.2337005138397217 + z * (0.25366920232772827
        + z * (-0.02086007222533226 + z * 0.0009036316769197583)));
    // Rotate by q quarter turns: odd quadrants swap sine and cosine; sine is negative in
    // quadrants 2 and 3, cosine in quadrants 1 and 2.
    let swap = (q & UV(1u)) != UV(0u);
    let s1 = select(s, c, swap);
    let c1 = select(c, s, swap);
    let s_neg = (q & UV(2u)) != UV(0u);
    let c_neg = ((q + UV(1u)) & UV(2u)) != UV(0u);
    return SinCos(select(s1, -s1, s_neg), select(c1, -c1, c_neg));
}
