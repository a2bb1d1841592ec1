//! Host side of the exact angles: frequencies as 64-bit fixed-point revolutions per position.
//!
//! The shaders never see radians. Pair `j` has frequency `f_j` radians per position; the host
//! stores `F_j = round(f_j / 2pi * 2^64) mod 2^64`, and a shader forms `p * F_j mod 2^64` in
//! integers (see `shaders/trig.wgsl`), which is the angle reduced to one revolution exactly
//! for every u32 position. Integer revolutions drop out of the product, so only the fraction
//! of `f_j / 2pi` matters.

use crate::dd::Dd;
use crate::error::{Error, Result};

/// 1 / (2 pi) as an unevaluated sum of two f64 (106 bits).
const INV_TWO_PI_HI: f64 = 0.159_154_943_091_895_35;
const INV_TWO_PI_LO: f64 = -9.839_338_337_591_243e-18;

/// `round(f / 2pi * 2^64) mod 2^64` for a finite, non-negative frequency `f = f.hi + f.lo`
/// (double-double) in radians per position.
///
/// `f / 2pi` is formed in double-double arithmetic (an exact product by fused multiply-add
/// plus the cross terms), so the result is within a few units of the last place of the
/// 64-bit fraction for frequencies up to [`MAX_FREQUENCY`]: at position 2^32 the angle is off
/// by at most about 2^-31 revolutions (3e-9 rad) beyond the frequency's own error.
pub(crate) fn fixed_revolutions(f: Dd) -> u64 {
    revolutions_2_64(f) as u64
}

/// The whole revolutions per position of `f`, `floor` of the value [`fixed_revolutions`]
/// rounds (its bits above 2^64), where they fit a u32 (`f < 2pi 2^32`): an f32 position's
/// fraction of them is a fraction of a revolution too, so the kernels need them there.
pub(crate) fn whole_revolutions(f: Dd) -> Option<u32> {
    u32::try_from(revolutions_2_64(f) >> 64).ok()
}

/// `round(f / 2pi * 2^64)` whole (below 2^103 for frequencies up to [`MAX_FREQUENCY`]).
fn revolutions_2_64(f: Dd) -> u128 {
    const TWO_64: f64 = 18_446_744_073_709_551_616.0;
    let p = f.hi * INV_TWO_PI_HI;
    // Exact: p + e == f.hi * INV_TWO_PI_HI.
    let e = f.hi.mul_add(INV_TWO_PI_HI, -p);
    let lo = e + (f.hi * INV_TWO_PI_LO + f.lo * INV_TWO_PI_HI);
    // Scaling by 2^64 is exact; split the high part into whole and fractional units
    // (both exact in f64), and fold the low part into the fraction before rounding.
    let hi = p * TWO_64;
    let whole = hi.floor();
    let frac = hi - whole;
    let rest = (lo * TWO_64 + frac).round() as i64;
    (whole as u128).wrapping_add(rest as i128 as u128)
}

/// The largest frequency, in radians per position, whose angles stay within the contract at
/// every u32 position: above it the double-double product `f / 2pi` no longer pins the
/// 64-bit fraction (2^40 rad per position: an error of 2^-33 rad at position 2^32).
pub(crate) const MAX_FREQUENCY: f64 = 1_099_511_627_776.0;

/// Packs frequencies for a kernel that handles `g` pairs per invocation: for each group of
/// `g` pairs, their `g` low words, their `g` high words, and their `g` third words
/// (`freq[3 * group]`, `freq[3 * group + 1]`, `freq[3 * group + 2]` in the shader, as `u32`
/// or `vec4<u32>`): RoPE's M-RoPE axes, or the sinusoidal kernel's whole revolutions for
/// f32 positions.
pub(crate) fn pack_frequencies(inv_freq: &[Dd], axes: &[u32], g: usize) -> Vec<u32> {
    debug_assert!(g > 0 && inv_freq.len().is_multiple_of(g) && axes.len() == inv_freq.len());
    let mut words = Vec::with_capacity(inv_freq.len() * 3);
    for (group, axes) in inv_freq.chunks(g).zip(axes.chunks(g)) {
        let fixed: Vec<u64> = group.iter().map(|&f| fixed_revolutions(f)).collect();
        words.extend(fixed.iter().map(|&v| v as u32));
        words.extend(fixed.iter().map(|&v| (v >> 32) as u32));
        words.extend_from_slice(axes);
    }
    words
}

/// The frequencies as double-double values, each finite, non-negative and at most
/// [`MAX_FREQUENCY`] (above it angles would not be exact).
pub(crate) fn check_frequencies(hi: &[f64], lo: &[f64]) -> Result<Vec<Dd>> {
    hi.iter()
        .zip(lo)
        .map(|(&hi, &lo)| {
            if hi.is_finite() && (0.0..=MAX_FREQUENCY).contains(&hi) {
                Ok(Dd { hi, lo })
            } else {
                Err(Error::InvalidParameter {
                    what: "frequency (radians per position)",
                    value: hi,
                    need: "finite, non-negative and at most 2^40: larger ones alias and \
                           cannot be reduced exactly (check the base or the timescales)",
                })
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_point_matches_exact_fraction() {
        // f = 2pi * k / 2^m are exactly representable fractions of a revolution only up to
        // f64 rounding of f itself; compare against a 128-bit computation instead:
        // f = m * 2^e exactly, times 2^64 / 2pi from a 128-bit constant.
        // floor(2^128 / 2pi) = 0x28be60db9391054a7f09d5f47d4d3770 (Payne-Hanek table digits).
        const INV_TWO_PI_128: u128 = 0x28be_60db_9391_054a_7f09_d5f4_7d4d_3770;
        for &f in &[
            1.0,
            0.5,
            1e-4,
            0.123_456_789,
            1.0 / 3.0,
            7.0,
            1e-9,
            0.999_999,
        ] {
            let bits = f64::to_bits(f);
            let exp = ((bits >> 52) & 0x7ff) as i32 - 1075;
            let mant = (bits & ((1u64 << 52) - 1)) | (1u64 << 52);
            // f * 2^64 / 2pi = mant * 2^exp * INV / 2^64: a 53 x 128-bit product.
            let lo = (mant as u128) * (INV_TWO_PI_128 & u64::MAX as u128);
            let hi = (mant as u128) * (INV_TWO_PI_128 >> 64);
            // value * 2^64 where value = (hi * 2^64 + lo) * 2^exp / 2^128
            // = (hi + lo / 2^64) * 2^(exp) ; shift right by -exp (exp < 0 here).
            let total_hi = hi + (lo >> 64);
            let shift = (-exp) as u32;
            let exact = if shift >= 128 {
                0
            } else {
                (total_hi >> shift) as u64
            };
            let got = fixed_revolutions(Dd::from_f64(f));
            let diff = got.wrapping_sub(exact) as i64;
            assert!(diff.abs() <= 2, "f = {f}: got {got:#x}, exact {exact:#x}");
        }
    }

    #[test]
    fn whole_revolutions_are_the_bits_above_the_fraction() {
        use std::f64::consts::TAU;
        // Just below and above whole numbers of revolutions (away from the rounding edge).
        for (f, whole) in [(0.5, 0), (TAU * 0.999, 0), (TAU * 1.001, 1), (1000.0, 159)] {
            assert_eq!(whole_revolutions(Dd::from_f64(f)), Some(whole), "f = {f}");
        }
        assert_eq!(whole_revolutions(Dd::from_f64(TAU * 4.3e9)), None);
        // The fraction is unchanged by the split.
        let f = Dd::from_f64(1000.0);
        let frac = (1000.0 / TAU - 159.0) * 18_446_744_073_709_551_616.0;
        let got = fixed_revolutions(f) as f64;
        assert!((got - frac).abs() / frac < 1e-12, "{got} vs {frac}");
    }

    #[test]
    fn packing_puts_low_words_first_per_group() {
        let freqs = [1.0, 0.5, 0.25, 0.125].map(Dd::from_f64);
        let words = pack_frequencies(&freqs, &[0, 1, 2, 0], 2);
        let f: Vec<u64> = freqs.map(fixed_revolutions).to_vec();
        assert_eq!(
            words,
            vec![
                f[0] as u32,
                f[1] as u32,
                (f[0] >> 32) as u32,
                (f[1] >> 32) as u32,
                0,
                1,
                f[2] as u32,
                f[3] as u32,
                (f[2] >> 32) as u32,
                (f[3] >> 32) as u32,
                2,
                0
            ]
        );
    }
}
