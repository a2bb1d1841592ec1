//! [`Rotary`]: the bridge as a burn `Module` with the calls of burn's own
//! `nn::RotaryEncoding`, so that a burn model swaps one for the other where it builds it.

use burn::module::Module;
use burn::tensor::{Int, Tensor, TensorData};
use wgpu_posenc::{LayerRope, Positions, Rope, RopeSpec};

use crate::{BurnPosEnc, Error, Result};

/// RoPE over `[batch, heads, seq, head_dim]` burn tensors through the bridge: the calls of
/// burn's `nn::RotaryEncoding` (`forward(x)`, `apply(x, start)`), with the crate's exact
/// angles at every position and its variants (half-split or interleaved pairs, partial
/// rotation, every scaling HF has), no table of positions to size or shift, and the error
/// returned instead of a panic.
///
/// ```no_run
/// # fn main() -> Result<(), wgpu_posenc_burn::Error> {
/// use burn::tensor::{Distribution, Tensor};
/// use wgpu_posenc::{PairLayout, RopeSpec};
/// use wgpu_posenc_burn::{BurnPosEnc, Rotary};
///
/// let bridge = BurnPosEnc::init()?;
/// // Was: RotaryEncodingConfig::new(4096, 128).init(&device) (burn pairs (2j, 2j + 1)).
/// let rotary = Rotary::new(&bridge, &RopeSpec::new().pair_layout(PairLayout::Interleaved), 128)?;
/// let q = Tensor::<4>::random([1, 8, 16, 128], Distribution::Default, bridge.device());
/// let q = rotary.apply(q, 40)?; // tokens at positions 40..56
/// # Ok(()) }
/// ```
///
/// It holds no parameters: saving and loading a model that contains one records nothing for
/// it, and the module is rebuilt from its spec.
#[derive(Module, Debug)]
pub struct Rotary {
    #[module(skip)]
    bridge: BurnPosEnc,
    #[module(skip)]
    rope: Rope,
}

impl Rotary {
    /// RoPE of `spec` over heads of `head_dim` elements, on the bridge's device.
    pub fn new(bridge: &BurnPosEnc, spec: &RopeSpec, head_dim: u64) -> Result<Self> {
        Ok(Self {
            bridge: bridge.clone(),
            rope: bridge.rope(spec, head_dim)?,
        })
    }

    /// The RoPE of one layer of an HF model, as [`wgpu_posenc::HfRope`] reads it from the
    /// model's `config.json` ([`HfRope::layer`](wgpu_posenc::HfRope::layer)).
    pub fn from_layer(bridge: &BurnPosEnc, layer: &LayerRope) -> Result<Self> {
        Self::new(bridge, &layer.spec, layer.head_dim)
    }

    /// `x` with tokens at positions `0..seq` (burn's `RotaryEncoding::forward`).
    pub fn forward(&self, x: Tensor<4>) -> Result<Tensor<4>> {
        self.apply(x, 0)
    }

    /// `x` with tokens at positions `start..start + seq` (burn's `RotaryEncoding::apply`):
    /// the prompt from 0, then each decode step at the cache length. A start past
    /// `u32::MAX` is [`wgpu_posenc::Error::PositionOverflow`].
    pub fn apply(&self, x: Tensor<4>, start: usize) -> Result<Tensor<4>> {
        let start = start_u32(start, x.dims()[2])?;
        self.bridge.apply(&self.rope, x, Positions::Start(start))
    }

    /// Q and K in one dispatch at positions `start..start + seq` (K may have fewer heads).
    pub fn apply_qk(
        &self,
        q: Tensor<4>,
        k: Tensor<4>,
        start: usize,
    ) -> Result<(Tensor<4>, Tensor<4>)> {
        let start = start_u32(start, q.dims()[2])?;
        self.bridge
            .apply_qk(&self.rope, q, k, Positions::Start(start))
    }

    /// `x` at explicit positions: one id per token, `[batch * seq]` row-major (HF's
    /// `position_ids`), as a burn int tensor.
    pub fn apply_ids(&self, x: Tensor<4>, ids: Tensor<1, Int>) -> Result<Tensor<4>> {
        self.bridge.apply(&self.rope, x, Positions::Ids(ids))
    }

    /// `ids` as a burn int tensor on the bridge's device, for [`Rotary::apply_ids`].
    pub fn ids(&self, ids: &[u32]) -> Tensor<1, Int> {
        let data = TensorData::new(ids.to_vec(), [ids.len()]);
        Tensor::from_data(data, self.bridge.device())
    }

    /// The prepared RoPE, for the bridge's other calls ([`BurnPosEnc::qkv`]).
    pub fn rope(&self) -> &Rope {
        &self.rope
    }

    /// The bridge it runs on.
    pub fn bridge(&self) -> &BurnPosEnc {
        &self.bridge
    }
}

/// `start` as a u32 position, checked with the `seq` tokens that follow it.
fn start_u32(start: usize, seq: usize) -> Result<u32> {
    match u32::try_from(start) {
        Ok(s) if (s as u64) + (seq as u64) <= 1 << 32 => Ok(s),
        _ => Err(Error::PosEnc(wgpu_posenc::Error::PositionOverflow {
            start: start as u64,
            seq: seq as u64,
        })),
    }
}
