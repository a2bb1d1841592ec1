//! Double-double arithmetic: a real number as the unevaluated sum `hi + lo` of two f64
//! (about 106 bits), for the frequencies whose rounding to f64 would show in the angle.
//!
//! At position 2^32 an angle `p * f` inherits `p` times the error of `f`: rounding
//! `f = base^(-2j/r)` to f64 alone moves it by up to 2.1e-7 rad, more than the angle
//! contract allows. In double-double the frequency is exact to ~1e-32 relative, so the
//! 64-bit fixed-point revolutions the kernels reduce are the real-number ones.
//!
//! The algorithms are the classic error-free transformations (Dekker, Knuth) and the QD
//! library's shapes for exp and log (Hida, Li, Bailey): exp by argument reduction, Taylor
//! series and repeated squaring of `exp(r) - 1`; log by Newton's iteration on exp.

/// `hi + lo` with `|lo| <= ulp(hi) / 2`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Dd {
    pub hi: f64,
    pub lo: f64,
}

/// ln 2 in double-double.
const LN2: Dd = Dd {
    hi: std::f64::consts::LN_2,
    lo: 2.319_046_813_846_299_6e-17,
};

/// 2 pi in double-double.
pub(crate) const TWO_PI: Dd = Dd {
    hi: std::f64::consts::TAU,
    lo: 2.449_293_598_294_706_4e-16,
};

/// `a + b` exactly, as a normalized pair.
fn two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    let bb = s - a;
    Dd {
        hi: s,
        lo: (a - (s - bb)) + (b - bb),
    }
}

/// `a + b` exactly when `|a| >= |b|`.
fn quick_two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    Dd {
        hi: s,
        lo: b - (s - a),
    }
}

/// `a * b` exactly (fused multiply-add gives the rounding error).
fn two_prod(a: f64, b: f64) -> Dd {
    let p = a * b;
    Dd {
        hi: p,
        lo: a.mul_add(b, -p),
    }
}

impl Dd {
    pub const fn from_f64(x: f64) -> Self {
        Self { hi: x, lo: 0.0 }
    }

    pub fn add(self, o: Dd) -> Dd {
        let s = two_sum(self.hi, o.hi);
        let t = two_sum(self.lo, o.lo);
        let s = quick_two_sum(s.hi, s.lo + t.hi);
        quick_two_sum(s.hi, s.lo + t.lo)
    }

    pub fn neg(self) -> Dd {
        Dd {
            hi: -self.hi,
            lo: -self.lo,
        }
    }

    pub fn sub(self, o: Dd) -> Dd {
        self.add(o.neg())
    }

    pub fn mul(self, o: Dd) -> Dd {
        let p = two_prod(self.hi, o.hi);
        quick_two_sum(p.hi, p.lo + (self.hi * o.lo + self.lo * o.hi))
    }

    pub fn mul_f64(self, b: f64) -> Dd {
        let p = two_prod(self.hi, b);
        quick_two_sum(p.hi, p.lo + self.lo * b)
    }

    pub fn div(self, o: Dd) -> Dd {
        let q1 = self.hi / o.hi;
        let r = self.sub(o.mul_f64(q1));
        let q2 = r.hi / o.hi;
        let r = r.sub(o.mul_f64(q2));
        let q3 = r.hi / o.hi;
        quick_two_sum(q1, q2).add(Dd::from_f64(q3))
    }

    /// e^self, for `|self| < 700`.
    pub fn exp(self) -> Dd {
        // self = k ln 2 + r, |r| <= ln 2 / 2; then r / 2^10, whose Taylor series converges
        // in a few terms, and (1 + s)^2 - 1 = s (2 + s) ten times to undo the division.
        let k = (self.hi / LN2.hi).round();
        let r = self.sub(LN2.mul_f64(k)).mul_f64(1.0 / 1024.0);
        let mut term = r;
        let mut s = r;
        for n in 2..=14 {
            // Divided in double-double: 1/n rounded to f64 would cost 1e-25 relative.
            term = term.mul(r).div(Dd::from_f64(f64::from(n)));
            s = s.add(term);
            if term.hi.abs() < 1e-36 {
                break;
            }
        }
        for _ in 0..10 {
            s = s.mul(s.add(Dd::from_f64(2.0)));
        }
        let e = s.add(Dd::from_f64(1.0));
        let scale = 2f64.powi(k as i32);
        Dd {
            hi: e.hi * scale,
            lo: e.lo * scale,
        }
    }

    /// ln(self), for a positive finite value.
    pub fn ln(self) -> Dd {
        // Newton on exp: y <- y + x e^-y - 1, from the f64 logarithm; each step doubles the
        // correct bits (53 -> 106).
        let mut y = Dd::from_f64(self.hi.ln());
        for _ in 0..2 {
            y = y.add(self.mul(y.neg().exp())).sub(Dd::from_f64(1.0));
        }
        y
    }
}

/// `base^(-num / den)` in double-double, for `base > 0`: the RoPE and sinusoidal
/// frequency `base^(-2j/r)` with `num = 2j`, `den = r`.
pub(crate) fn pow_neg_ratio(base: f64, num: u64, den: u64) -> Dd {
    exp_neg_ratio(Dd::from_f64(base).ln(), num, den)
}

/// `exp(-(num / den) * l)` in double-double: [`pow_neg_ratio`] with `l = ln(base)` given.
pub(crate) fn exp_neg_ratio(l: Dd, num: u64, den: u64) -> Dd {
    if num == 0 {
        return Dd::from_f64(1.0);
    }
    let e = Dd::from_f64(num as f64).div(Dd::from_f64(den as f64));
    l.mul(e).neg().exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `|a - b|` relative to `b`.
    fn rel(a: Dd, b: Dd) -> f64 {
        (a.sub(b).hi / b.hi).abs()
    }

    #[test]
    fn exp_and_ln_are_inverse_to_double_double_precision() {
        for x in [1e-9, 0.5, 1.0, 2.0, 10_000.0, 1e6, 123.456_789, 1e-300] {
            let d = Dd::from_f64(x);
            assert!(rel(d.ln().exp(), d) < 1e-30, "{x}");
        }
        // e^1 = 2.718281828459045235360287471352662497757...
        let e = Dd::from_f64(1.0).exp();
        let want = Dd {
            hi: std::f64::consts::E,
            lo: 1.445_646_891_729_250_2e-16,
        };
        assert!(rel(e, want) < 1e-31, "{e:?}");
        // ln 10 = 2.302585092994045684017991454684364207601...
        let l = Dd::from_f64(10.0).ln();
        let want = Dd {
            hi: std::f64::consts::LN_10,
            lo: -2.170_756_223_382_249e-16,
        };
        assert!(rel(l, want) < 1e-31, "{l:?}");
    }

    #[test]
    fn powers_with_exact_results_are_exact() {
        // 10000^(-1/2) = 1/100 (not a binary fraction: its double-double value), 2^(-3/1) =
        // 0.125, 16^(-1/4) = 0.5.
        let hundredth = Dd::from_f64(1.0).div(Dd::from_f64(100.0));
        for (base, num, den, want) in [
            (10_000.0, 1, 2, hundredth),
            (2.0, 3, 1, Dd::from_f64(0.125)),
            (16.0, 1, 4, Dd::from_f64(0.5)),
        ] {
            let got = pow_neg_ratio(base, num, den);
            assert!(rel(got, want) < 1e-30, "{base} {num}/{den}: {got:?}");
        }
    }

    #[test]
    fn double_double_is_closer_than_f64_to_the_real_frequency() {
        // The f64 value differs from the double-double one by up to half an ulp: the
        // double-double low word holds what rounding to f64 drops.
        let d = pow_neg_ratio(10_000.0, 2, 128);
        let f = 10_000f64.powf(-2.0 / 128.0);
        assert!((d.hi - f).abs() <= f64::EPSILON * f);
        assert!(d.lo != 0.0);
    }
}
