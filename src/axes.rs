//! N-D RoPE: which position axis and which frequency each rotated pair takes (M-RoPE's
//! sections and orders, per-axis, dealt and rising frequency lists).

use crate::dd::{Dd, TWO_PI, exp_neg_ratio};
use crate::error::{Error, Result};

/// The most pairs a spec rotates: half of `RopeSpec::MAX_HEAD_DIM` (every list sized by the
/// pairs is bounded by it before it is allocated).
pub(crate) const MAX_PAIRS: u64 = 1 << 19;

/// Multimodal RoPE (Qwen2-VL and later): each pair takes its position from one of three
/// axes (temporal, height, width) of [`Positions::Axes`](crate::Positions::Axes), or four
/// (FLUX.2's `(t, h, w, l)`, `RopeSpec::axes_rope4`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MRope {
    /// Pairs per axis `[t, h, w]`, summing with [`MRope::fourth`] to `r / 2` (HF's
    /// `mrope_section`, whose key order is the family's: ERNIE 4.5 VL writes `[h, w, t]`).
    pub section: [u64; 3],
    /// Pairs on a fourth axis, after the width ones (FLUX.2's `l`); 0 for three axes. A
    /// fourth axis takes per-axis frequencies in contiguous blocks
    /// ([`AxisFrequencies::PerAxis`], [`MRopeOrder::Chunks`]), and positions
    /// `[4, batch, seq]`.
    pub fourth: u64,
    /// Which pairs read which axis.
    pub order: MRopeOrder,
    /// Which frequency each pair has.
    pub frequencies: AxisFrequencies,
}

/// The frequencies of the pairs of [`MRope`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AxisFrequencies {
    /// One list over the `r / 2` pairs, `base^(-2j/r)` (and its scaling), whatever axis a
    /// pair reads (Qwen2-VL and the other VLMs of transformers).
    #[default]
    Shared,
    /// Each axis's pairs have a list of their own width: the `k`-th pair of an axis with
    /// `n` pairs has `base^(-2k/(2n))` (diffusers' FLUX, Wan, HunyuanVideo: one 1-D RoPE per
    /// axis, the three concatenated), whatever the order of the pairs (an axis's `k`-th pair
    /// in the row takes its list's `k`-th entry), without a frequency scaling.
    PerAxis,
    /// One list over the `r / 2` pairs, `base^(-2i/r)`, dealt to the axes in turn like
    /// cards: index 0 to the first axis with pairs, 1 to the next, and so on, skipping an
    /// axis once its pairs are all dealt; an axis's `k`-th pair takes the `k`-th index dealt
    /// to it. Pixtral's vision tower (`PixtralVisionRotaryEmbedding`, section `[0, d/4, d/4]`
    /// over half-split pairs): the height pairs take the even frequencies, the width pairs the
    /// odd ones. Without a frequency scaling.
    Dealt,
    /// Each axis's `n` pairs have a list of their own rising from `pi/2`: the `k`-th has
    /// `(pi/2) base^(k/(n-1))` (`pi/2` alone where `n = 1`), assigned as
    /// [`AxisFrequencies::PerAxis`] lists are. LTX-Video's and LTX-2's
    /// (`LTXVideoRotaryPosEmbed`, `LTX2AudioVideoRotaryPosEmbed`: `theta **
    /// linspace(0, 1, n) * pi / 2` over coordinates `2 c / base_size - 1` in `(-1, 1)`, the
    /// three axes interleaved per frequency, [`MRopeOrder::Interleaved`]). Without a
    /// frequency scaling; `RopeSpec::axis_bases` gives each axis a base of its own.
    Rising,
}

impl AxisFrequencies {
    /// Whether each axis has a list of its own ([`AxisFrequencies::PerAxis`],
    /// [`AxisFrequencies::Rising`]).
    pub fn per_axis(self) -> bool {
        matches!(self, AxisFrequencies::PerAxis | AxisFrequencies::Rising)
    }

    /// The shared-list index of each pair, given each pair's axis (`axes`, from
    /// [`MRope::axes`]); the identity for [`AxisFrequencies::Shared`] and
    /// [`AxisFrequencies::PerAxis`], whose lists are already in pair order.
    pub(crate) fn pair_indices(self, axes: &[u32]) -> Vec<usize> {
        if self != AxisFrequencies::Dealt {
            return (0..axes.len()).collect();
        }
        let mut left = [0usize; 4];
        axes.iter().for_each(|&a| left[a as usize] += 1);
        // The indices each axis receives, in the order it receives them.
        let mut hands: [Vec<usize>; 4] = Default::default();
        let mut next = 0;
        while next < axes.len() {
            for (a, hand) in hands.iter_mut().enumerate() {
                if left[a] > 0 {
                    left[a] -= 1;
                    hand.push(next);
                    next += 1;
                }
            }
        }
        let mut taken = [0usize; 4];
        axes.iter()
            .map(|&a| {
                taken[a as usize] += 1;
                hands[a as usize][taken[a as usize] - 1]
            })
            .collect()
    }
}

/// How the pairs of [`MRope`] are assigned to the three axes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "hf-config",
    derive(serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum MRopeOrder {
    /// Contiguous sections `[t.. | h.. | w..]` (Qwen2-VL, Qwen2.5-VL, GLM-4.1V).
    #[default]
    Chunks,
    /// `t h w t h w ...` while each axis has pairs left, the rest temporal (Qwen3-VL,
    /// HunYuan-VL v4).
    Interleaved,
    /// `h w h w ...` over the first `h + w` pairs (`h == w`), then the `t` pairs (ERNIE 4.5
    /// VL, whose rotary module stacks the two spatial halves).
    HwThenT,
    /// `w h w h ...` over the first `h + w` pairs (`h == w`), then the `t` pairs: width
    /// first (Kimi K2.5's vision tower).
    WhThenT,
    /// Contiguous sections `[w.. | h.. | t..]`: width first (Step 3.7's and Inkling 2's
    /// vision towers).
    WhtChunks,
}

impl MRope {
    /// Checks that the sections cover `pairs` pairs (at most half of
    /// `RopeSpec::MAX_HEAD_DIM`); [`MRopeOrder::HwThenT`] and [`MRopeOrder::WhThenT`] need
    /// `h == w`.
    pub fn check(&self, pairs: u64) -> Result<()> {
        let [t, h, w] = self.section;
        let sum = t
            .checked_add(h)
            .and_then(|v| v.checked_add(w))
            .and_then(|v| v.checked_add(self.fourth));
        if sum != Some(pairs)
            || pairs > MAX_PAIRS
            || (matches!(self.order, MRopeOrder::HwThenT | MRopeOrder::WhThenT) && h != w)
        {
            return Err(Error::InvalidMRopeSection {
                section: self.section,
                fourth: self.fourth,
                pairs,
            });
        }
        if self.fourth > 0
            && (self.order != MRopeOrder::Chunks || self.frequencies != AxisFrequencies::PerAxis)
        {
            return Err(Error::Unsupported(
                "a fourth position axis takes per-axis frequencies in contiguous blocks \
                 (RopeSpec::axes_rope4)",
            ));
        }
        Ok(())
    }

    /// The position planes the spec reads: 4 with a fourth axis, else 3.
    pub fn planes(&self) -> u64 {
        if self.fourth > 0 { 4 } else { 3 }
    }

    /// The axis (0, 1, 2) of each of the `pairs` pairs (an error where [`MRope::check`]
    /// fails).
    pub fn axes(&self, pairs: u64) -> Result<Vec<u32>> {
        self.check(pairs)?;
        let [t, h, w] = self.section;
        Ok((0..pairs)
            .map(|j| match self.order {
                // HF Qwen3-VL: pairs 1, 4, 7, .. below 3h take height, 2, 5, 8, .. below
                // 3w take width, all others temporal.
                MRopeOrder::Interleaved => match j % 3 {
                    1 if j < 3 * h => 1,
                    2 if j < 3 * w => 2,
                    _ => 0,
                },
                MRopeOrder::Chunks if j < t => 0,
                MRopeOrder::Chunks if j < t + h => 1,
                MRopeOrder::Chunks if j < t + h + w => 2,
                MRopeOrder::Chunks => 3,
                MRopeOrder::HwThenT if j < h + w => 1 + (j % 2) as u32,
                MRopeOrder::HwThenT => 0,
                MRopeOrder::WhThenT if j < h + w => 2 - (j % 2) as u32,
                MRopeOrder::WhThenT => 0,
                MRopeOrder::WhtChunks if j < w => 2,
                MRopeOrder::WhtChunks if j < w + h => 1,
                MRopeOrder::WhtChunks => 0,
            })
            .collect())
    }
}

impl MRope {
    /// The frequencies of the `pairs` pairs of per-axis lists ([`AxisFrequencies::PerAxis`]
    /// or [`AxisFrequencies::Rising`]): each axis's list of its own width (with its own
    /// base, `bases[axis]`), the `k`-th pair of an axis in the row taking entry `k`.
    pub(crate) fn per_axis_frequencies(
        &self,
        pairs: u64,
        bases: [f64; 4],
    ) -> Result<crate::Frequencies> {
        let mut lists = Vec::with_capacity(4);
        for (axis, n) in self.section.into_iter().chain([self.fourth]).enumerate() {
            if n > MAX_PAIRS {
                return Err(Error::InvalidMRopeSection {
                    section: self.section,
                    fourth: self.fourth,
                    pairs,
                });
            }
            lists.push(match self.frequencies {
                AxisFrequencies::Rising => rising(n, bases[axis]),
                _ if n == 0 => Vec::new(),
                _ => {
                    let f = crate::Scaling::Default.frequencies(2 * n as u32, bases[axis], 0)?;
                    f.inv_freq
                        .into_iter()
                        .zip(f.inv_freq_lo)
                        .map(|(hi, lo)| Dd { hi, lo })
                        .collect()
                }
            });
        }
        let mut taken = [0usize; 4];
        let mut out = crate::Frequencies {
            inv_freq: Vec::new(),
            inv_freq_lo: Vec::new(),
            attention_factor: 1.0,
        };
        for a in self.axes(pairs)? {
            let f = lists[a as usize][taken[a as usize]];
            out.inv_freq.push(f.hi);
            out.inv_freq_lo.push(f.lo);
            taken[a as usize] += 1;
        }
        Ok(out)
    }
}

/// LTX's list of `n` frequencies rising from `pi/2` to `(pi/2) base`: `(pi/2)
/// base^(k/(n-1))` in double-double.
fn rising(n: u64, base: f64) -> Vec<Dd> {
    let quarter_turn = Dd {
        hi: TWO_PI.hi / 4.0,
        lo: TWO_PI.lo / 4.0,
    };
    let l = Dd::from_f64(base).ln().neg();
    (0..n)
        .map(|k| exp_neg_ratio(l, k, (n - 1).max(1)).mul(quarter_turn))
        .collect()
}
