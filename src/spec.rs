//! What to compute: plain data describing each encoding, validated once at the boundary.

use crate::error::{Error, Result};
use crate::frequencies::Scaling;

/// Which two elements of a row form a rotated pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PairLayout {
    /// Pairs `(2j, 2j + 1)`: RoFormer, GPT-J, Meta's LLaMA (complex form), llama.cpp NORM,
    /// burn, candle `rope_i`.
    Interleaved,
    /// Pairs `(j, j + r/2)`: GPT-NeoX, HF transformers `rotate_half`, llama.cpp NEOX,
    /// candle `rope`, vLLM `is_neox_style`.
    #[default]
    HalfSplit,
}

/// Where the sin and cos of frequency `i` go in a sinusoidal row of `d_model` elements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SinusoidalLayout {
    /// `PE[p, 2i] = sin`, `PE[p, 2i + 1] = cos` (Vaswani et al., 2017).
    #[default]
    Interleaved,
    /// `[sin_0 .. sin_{d/2-1} | cos_0 .. cos_{d/2-1}]` (tensor2tensor, fairseq, HF Marian).
    Concatenated,
}

/// Element type of a tensor in GPU memory. Arithmetic is always f32.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// 32-bit float.
    #[default]
    F32,
    /// 16-bit float; needs the device feature `SHADER_F16`. Results round to nearest on store.
    F16,
}

impl Dtype {
    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            Dtype::F32 => 4,
            Dtype::F16 => 2,
        }
    }
}

/// Rotary position embedding: how to rotate. The tensor's shape comes with the tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct RopeSpec {
    /// Rotary dimension `r` (even, at most `head_dim`); `None` rotates the whole head.
    pub rotary_dim: Option<u64>,
    /// Base (theta) of the frequencies `base^(-2j/r)`; 10 000 in RoFormer and LLaMA 1/2.
    pub base: f64,
    /// Which elements pair up.
    pub pair_layout: PairLayout,
    /// Rotate by the negated angle (the backward pass, or undoing a rotation).
    pub inverse: bool,
    /// Frequency scaling for long context.
    pub scaling: Scaling,
    /// Sequence length that length-dependent scalings (dynamic NTK, LongRoPE) see; `None`
    /// uses the number of tokens of the view plus the start position.
    pub scaling_seq_len: Option<u64>,
}

impl Default for RopeSpec {
    fn default() -> Self {
        Self {
            rotary_dim: None,
            base: 10_000.0,
            pair_layout: PairLayout::HalfSplit,
            inverse: false,
            scaling: Scaling::Default,
            scaling_seq_len: None,
        }
    }
}

impl RopeSpec {
    /// The default: whole head rotated, base 10 000, half-split pairs (HF transformers).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the pair layout.
    pub fn pair_layout(mut self, layout: PairLayout) -> Self {
        self.pair_layout = layout;
        self
    }

    /// Sets the base (theta).
    pub fn base(mut self, base: f64) -> Self {
        self.base = base;
        self
    }

    /// Rotates only the first `r` elements of each head.
    pub fn rotary_dim(mut self, r: u64) -> Self {
        self.rotary_dim = Some(r);
        self
    }

    /// Rotates by the negated angle.
    pub fn inverse(mut self, inverse: bool) -> Self {
        self.inverse = inverse;
        self
    }

    /// Sets the frequency scaling.
    pub fn scaling(mut self, scaling: Scaling) -> Self {
        self.scaling = scaling;
        self
    }

    /// Checks the spec against a head dimension; returns the rotary dimension.
    pub(crate) fn validate(&self, head_dim: u64) -> Result<u64> {
        if head_dim == 0 || !head_dim.is_multiple_of(2) {
            return Err(Error::InvalidHeadDim { head_dim });
        }
        let r = self.rotary_dim.unwrap_or(head_dim);
        if r == 0 || !r.is_multiple_of(2) || r > head_dim {
            return Err(Error::InvalidRotaryDim {
                rotary_dim: r,
                head_dim,
            });
        }
        check_base(self.base)?;
        Ok(r)
    }
}

/// The sinusoidal encoding of Vaswani et al.: `PE[p, 2i] = sin(p w_i)`, `PE[p, 2i+1] = cos(p w_i)`,
/// `w_i = base^(-2i/d_model)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SinusoidalSpec {
    /// Width of a row (even).
    pub d_model: u64,
    /// Base of the frequencies; 10 000 in the original Transformer.
    pub base: f64,
    /// Where the sines and cosines go.
    pub layout: SinusoidalLayout,
}

impl SinusoidalSpec {
    /// Interleaved layout, base 10 000.
    pub fn new(d_model: u64) -> Self {
        Self {
            d_model,
            base: 10_000.0,
            layout: SinusoidalLayout::Interleaved,
        }
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

    pub(crate) fn validate(&self) -> Result<()> {
        if self.d_model == 0 || !self.d_model.is_multiple_of(2) {
            return Err(Error::InvalidDModel {
                d_model: self.d_model,
            });
        }
        check_base(self.base)
    }

    /// The pair layout of the shared pair kernels that puts sin and cos where `layout` says.
    pub(crate) fn pair_layout(&self) -> PairLayout {
        match self.layout {
            SinusoidalLayout::Interleaved => PairLayout::Interleaved,
            SinusoidalLayout::Concatenated => PairLayout::HalfSplit,
        }
    }
}

fn check_base(base: f64) -> Result<()> {
    if base.is_finite() && base > 1.0 {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            what: "base",
            value: base,
            need: "a finite number greater than 1",
        })
    }
}
