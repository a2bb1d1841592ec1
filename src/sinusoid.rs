//! The sinusoidal encoding as plain data: where sin and cos go in a row, and the frequency
//! forms of the papers and libraries (Vaswani et al.'s base, tensor2tensor's and fairseq's
//! timescales, diffusers' timestep projection), validated once at the boundary.

use crate::dd::Dd;
use crate::error::{Error, Result};
use crate::frequencies::default_inv_freq_dd;
use crate::spec::{PairLayout, check_base};

/// Where the sin and cos of frequency `i` go in a sinusoidal row of `d_model` elements
/// (`n = d_model / 2` frequencies; an odd `d_model` ends each row with a zero).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SinusoidalLayout {
    /// `PE[p, 2i] = sin`, `PE[p, 2i + 1] = cos` (Vaswani et al., 2017).
    #[default]
    Interleaved,
    /// `[sin_0 .. sin_{n-1} | cos_0 .. cos_{n-1}]` (tensor2tensor, fairseq, HF Marian,
    /// diffusers' `get_timestep_embedding` by default).
    Concatenated,
    /// `[cos_0 .. cos_{n-1} | sin_0 .. sin_{n-1}]`: diffusers' `flip_sin_to_cos=True`
    /// (DiT, SD3, FLUX, Wan, HunyuanVideo, PixArt timestep projections).
    ConcatenatedCosFirst,
}

/// The frequencies of a sinusoidal encoding other than `base^(-2i/d_model)`, log-spaced over
/// the `n = d_model / 2` pairs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Timescales {
    /// `w_i = 1 / (min (max/min)^(i / (n - 1)))`: reciprocals of the timescales, as
    /// tensor2tensor's docstring says and fairseq computes (with `min = 1`).
    Reciprocal {
        /// Smallest timescale.
        min: f64,
        /// Largest timescale.
        max: f64,
    },
    /// `w_i = min * exp(-i ln(max/min) / max(n - 1, 1))`: what tensor2tensor's
    /// `get_timing_signal_1d` computes.
    Tensor2Tensor {
        /// `min_timescale`.
        min: f64,
        /// `max_timescale`.
        max: f64,
    },
    /// `w_i = exp(-ln(max_period) i / (n - shift))`: diffusers' `get_timestep_embedding`
    /// (`downscale_freq_shift` is `shift`; 1 by default there, 0 in `Timesteps(.., 0)`).
    Shifted {
        /// `max_period` (10 000 in diffusers).
        max_period: f64,
        /// `downscale_freq_shift`; `n - shift` must be positive.
        shift: f64,
    },
}

/// `ln(max / min) / max(n - 1, 1)` in double-double.
fn ln_ratio(min: f64, max: f64, n: u64) -> Dd {
    let steps = n.max(2) - 1;
    Dd::from_f64(max)
        .ln()
        .sub(Dd::from_f64(min).ln())
        .div(Dd::from_f64(steps as f64))
}

/// A sinusoidal encoding: `PE[p, sin slot of i] = sin(p w_i)`, `PE[p, cos slot] = cos(p w_i)`
/// at integer or f32 positions `p` (a token's index, a diffusion timestep, a coordinate),
/// with `w_i = base^(-2i/d_model)` (Vaswani et al.) unless [`Timescales`] say otherwise,
/// times [`SinusoidalSpec::freq_scale`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SinusoidalSpec {
    /// Width of a row, at least 2; an odd width ends each row with a zero (diffusers pads
    /// odd embedding widths so).
    pub d_model: u64,
    /// Base of the frequencies; 10 000 in the original Transformer.
    pub base: f64,
    /// Where the sines and cosines go.
    pub layout: SinusoidalLayout,
    /// Frequencies from two timescales or diffusers' form instead of `base`.
    pub timescales: Option<Timescales>,
    /// Every frequency multiplied by this (diffusers' `scale`: the angle is `scale * t *
    /// w_i`; Qwen-Image and AuraFlow pass 1000). 1 by default.
    pub freq_scale: f64,
    /// fairseq's padding index: the row of this position is all zeros (and the fused add
    /// adds nothing to such tokens). fairseq numbers real tokens from `padding_idx + 1`:
    /// pass that as the start, or position ids that map padding tokens to `padding_idx`.
    /// Integer positions only.
    pub padding_idx: Option<u32>,
}

impl SinusoidalSpec {
    /// Interleaved layout, base 10 000.
    pub fn new(d_model: u64) -> Self {
        Self {
            d_model,
            base: 10_000.0,
            layout: SinusoidalLayout::Interleaved,
            timescales: None,
            freq_scale: 1.0,
            padding_idx: None,
        }
    }

    /// diffusers' timestep projection, `Timesteps(dim, flip_sin_to_cos,
    /// downscale_freq_shift)` (`get_timestep_embedding`): `[sin | cos]`, or `[cos | sin]`
    /// flipped, `w_i = exp(-ln(10000) i / (dim / 2 - shift))`, a zero after the pairs when
    /// `dim` is odd. [`SinusoidalSpec::max_period`] and [`SinusoidalSpec::freq_scale`] set
    /// the other parameters; the timesteps are f32 positions
    /// ([`Positions::Float`](crate::Positions::Float)).
    pub fn timesteps(dim: u64, flip_sin_to_cos: bool, downscale_freq_shift: f64) -> Self {
        Self {
            layout: if flip_sin_to_cos {
                SinusoidalLayout::ConcatenatedCosFirst
            } else {
                SinusoidalLayout::Concatenated
            },
            timescales: Some(Timescales::Shifted {
                max_period: 10_000.0,
                shift: downscale_freq_shift,
            }),
            ..Self::new(dim)
        }
    }

    /// Frequencies that are the reciprocals of `n = d_model / 2` timescales log-spaced from
    /// `min` to `max`: `w_i = 1 / (min (max/min)^(i / (n - 1)))`, as tensor2tensor's
    /// docstring describes and fairseq computes with `(1, 10000)`. See
    /// [`SinusoidalSpec::tensor2tensor_timescales`] for what tensor2tensor's code computes
    /// (the same when `min == 1`).
    pub fn timescales(mut self, min: f64, max: f64) -> Self {
        self.timescales = Some(Timescales::Reciprocal { min, max });
        self
    }

    /// The frequencies tensor2tensor's `get_timing_signal_1d` computes:
    /// `inv_timescale_i = min * exp(-i ln(max/min) / max(n - 1, 1))`, `n = d_model / 2`.
    /// Models trained with tensor2tensor and `min_timescale != 1` expect these; with
    /// `min == 1` they equal [`SinusoidalSpec::timescales`].
    pub fn tensor2tensor_timescales(mut self, min: f64, max: f64) -> Self {
        self.timescales = Some(Timescales::Tensor2Tensor { min, max });
        self
    }

    /// diffusers' `max_period` of [`SinusoidalSpec::timesteps`] (a spec of another form
    /// takes the shifted form with shift 0).
    pub fn max_period(mut self, max_period: f64) -> Self {
        let shift = match self.timescales {
            Some(Timescales::Shifted { shift, .. }) => shift,
            _ => 0.0,
        };
        self.timescales = Some(Timescales::Shifted { max_period, shift });
        self
    }

    /// Multiplies every frequency by `scale` (diffusers' `scale`).
    pub fn freq_scale(mut self, scale: f64) -> Self {
        self.freq_scale = scale;
        self
    }

    /// fairseq's zeroed padding row.
    pub fn padding_idx(mut self, padding_idx: u32) -> Self {
        self.padding_idx = Some(padding_idx);
        self
    }

    /// Sets the layout.
    pub fn layout(mut self, layout: SinusoidalLayout) -> Self {
        self.layout = layout;
        self
    }

    /// Sets the base.
    pub fn base(mut self, base: f64) -> Self {
        self.base = base;
        self
    }

    /// Sin/cos pairs in a row: `d_model / 2`.
    pub fn pairs(&self) -> u64 {
        self.d_model / 2
    }

    /// The angular frequency of each sin/cos pair, radians per position.
    pub fn frequencies(&self) -> Vec<f64> {
        self.frequencies_dd().into_iter().map(|f| f.hi).collect()
    }

    /// [`SinusoidalSpec::frequencies`] in double-double: `w_0 q^i`, `q` and `w_0` from
    /// double-double logarithms and exponentials, times the frequency scale.
    pub(crate) fn frequencies_dd(&self) -> Vec<Dd> {
        let half = self.pairs();
        let (w0, step) = match self.timescales {
            // The RoPE frequencies of rotary dim d_model: a cos/sin cache filled by the table
            // kernel holds exactly the angles RoPE computes on the fly.
            None => {
                let rope =
                    default_inv_freq_dd(self.d_model.min(u64::from(u32::MAX)) as u32, self.base);
                return rope.into_iter().map(|w| self.scaled(w)).collect();
            }
            Some(Timescales::Reciprocal { min, max }) => {
                (Dd::from_f64(min).ln().neg(), ln_ratio(min, max, half))
            }
            Some(Timescales::Tensor2Tensor { min, max }) => {
                (Dd::from_f64(min).ln(), ln_ratio(min, max, half))
            }
            Some(Timescales::Shifted { max_period, shift }) => {
                let steps = Dd::from_f64(half as f64).sub(Dd::from_f64(shift));
                (Dd::from_f64(0.0), Dd::from_f64(max_period).ln().div(steps))
            }
        };
        let (w0, q) = (self.scaled(w0.exp()), step.neg().exp());
        let mut w = w0;
        (0..half)
            .map(|_| {
                let this = w;
                w = w.mul(q);
                this
            })
            .collect()
    }

    fn scaled(&self, w: Dd) -> Dd {
        if self.freq_scale == 1.0 {
            w
        } else {
            w.mul(Dd::from_f64(self.freq_scale))
        }
    }

    /// Checks the spec as every sinusoidal call does: `2 <= d_model < 2^32`, finite
    /// timescales with `0 < min <= max`, a finite `max_period > 0` with `d_model / 2 >
    /// shift`, a finite positive frequency scale, and a finite base above 1.
    pub fn validate(&self) -> Result<()> {
        if self.d_model < 2 || self.d_model > u64::from(u32::MAX) {
            return Err(Error::InvalidDModel {
                d_model: self.d_model,
            });
        }
        let bad = |what, value, need| Err(Error::InvalidParameter { what, value, need });
        match self.timescales {
            Some(Timescales::Reciprocal { min, max } | Timescales::Tensor2Tensor { min, max })
                if !(min.is_finite() && max.is_finite() && min > 0.0 && max >= min) =>
            {
                let value = if min > 0.0 { max } else { min };
                return bad(
                    "timescales (min, max)",
                    value,
                    "finite, with 0 < min <= max",
                );
            }
            Some(Timescales::Shifted { max_period, .. })
                if !(max_period.is_finite() && max_period > 0.0) =>
            {
                return bad("max_period", max_period, "a finite number above 0");
            }
            Some(Timescales::Shifted { shift, .. })
                if !(shift.is_finite() && (self.pairs() as f64) - shift > 0.0) =>
            {
                return bad(
                    "downscale_freq_shift",
                    shift,
                    "finite and below d_model / 2 (the exponent divides by d_model / 2 - shift)",
                );
            }
            _ => {}
        }
        if !(self.freq_scale.is_finite() && self.freq_scale > 0.0) {
            return bad(
                "frequency scale",
                self.freq_scale,
                "a finite number above 0",
            );
        }
        check_base(self.base)
    }

    /// The pair layout of the shared pair kernels that puts sin and cos where `layout` says
    /// (sin first; [`SinusoidalSpec::cos_first`] swaps them).
    pub(crate) fn pair_layout(&self) -> PairLayout {
        match self.layout {
            SinusoidalLayout::Interleaved => PairLayout::Interleaved,
            SinusoidalLayout::Concatenated | SinusoidalLayout::ConcatenatedCosFirst => {
                PairLayout::HalfSplit
            }
        }
    }

    /// The cosine goes in a pair's first element.
    pub(crate) fn cos_first(&self) -> bool {
        self.layout == SinusoidalLayout::ConcatenatedCosFirst
    }

    /// Element indices of the sin and the cos of pair `i` in a row.
    pub fn slots(&self, i: u64) -> (u64, u64) {
        let (a, b) = self.pair_layout().elements(2 * self.pairs(), i);
        if self.cos_first() { (b, a) } else { (a, b) }
    }
}
