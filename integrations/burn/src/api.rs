//! The bridge's operations on burn `Tensor`s: each checks its tensors' device, takes their
//! primitives of burn's `Cube` backend, checks the call (`checks.rs`) and runs it the way
//! that backend runs (`route.rs`): at once without fusion, in the fusion stream with it.

use burn::backend::Cube;
use burn::tensor::kind::Basic;
use burn::tensor::{BackendPrimitive, Int, Tensor};
use wgpu_posenc::{Positions, QkNorm, Rope, SinusoidalSpec};

use crate::checks::check_call;
use crate::ops::Call;
use crate::route::Route;
use crate::{BurnPosEnc, Error, Result};

impl BurnPosEnc {
    /// RoPE over `x` `[batch, heads, seq, head_dim]` at `positions` (each array an i32 or u32
    /// burn tensor), in place when `x` alone holds its buffer, else into a new tensor in the
    /// same pass. Returns the rotated tensor.
    pub fn apply(
        &self,
        rope: &Rope,
        x: Tensor<4>,
        positions: Positions<Tensor<1, Int>>,
    ) -> Result<Tensor<4>> {
        let [x] = self.run(Call::Rope(rope.clone()), [x], positions)?;
        Ok(x)
    }

    /// RoPE over Q and K in one dispatch with the same angles (K may have fewer heads), each
    /// as [`BurnPosEnc::apply`] does it.
    pub fn apply_qk(
        &self,
        rope: &Rope,
        q: Tensor<4>,
        k: Tensor<4>,
        positions: Positions<Tensor<1, Int>>,
    ) -> Result<(Tensor<4>, Tensor<4>)> {
        let [q, k] = self.run(Call::Qk(rope.clone()), [q, k], positions)?;
        Ok((q, k))
    }

    /// The fused attention preprocessing of [`PosEnc::encode_qkv`](wgpu_posenc::PosEnc::encode_qkv)
    /// on burn tensors: from the packed projection `qkv` `[batch, q_heads + 2 kv_heads, seq,
    /// head_dim]` (a BSHD projection after `swap_dims(1, 2)`), Q normalized (with `norm`) and
    /// rotated, K normalized, rotated and V copied into the caches `[batch, kv_heads,
    /// cache_len, head_dim]` at each token's position. Returns Q (the first `q_heads` heads of
    /// `qkv` rewritten in place when `qkv` alone holds its buffer, else a new `[batch, q_heads,
    /// seq, head_dim]` tensor) and the caches, written in place ([`Error::Shared`] if a clone
    /// of one is alive).
    #[expect(
        clippy::too_many_arguments,
        reason = "the fused call's parts, as the core crate's"
    )]
    pub fn qkv(
        &self,
        rope: &Rope,
        qkv: Tensor<4>,
        kv_heads: u64,
        positions: Positions<Tensor<1, Int>>,
        k_cache: Tensor<4>,
        v_cache: Tensor<4>,
        norm: Option<&QkNorm>,
    ) -> Result<[Tensor<4>; 3]> {
        let call = Call::Qkv {
            rope: rope.clone(),
            kv_heads,
            norm: norm.cloned(),
        };
        self.run(call, [qkv, k_cache, v_cache], positions)
    }

    /// The sinusoidal table `[seq, d_model]` at positions `start..start + seq`, as a new f32
    /// tensor on the bridge's device.
    pub fn sinusoidal_table(
        &self,
        spec: &SinusoidalSpec,
        seq: usize,
        start: u32,
    ) -> Result<Tensor<2>> {
        spec.validate()?;
        // CubeCL allocates a tensor as one storage binding: check the size before burn
        // does (its shape product would overflow first).
        let bytes = (seq as u64).saturating_mul(spec.d_model).saturating_mul(4);
        let limit = self
            .posenc
            .device()
            .limits()
            .max_storage_buffer_binding_size;
        if bytes > limit {
            return Err(wgpu_posenc::Error::BufferLimit {
                what: "the sinusoidal table (burn allocates a tensor as one storage binding)",
                bytes,
                limit,
            }
            .into());
        }
        let empty = Tensor::<2>::empty([seq, spec.d_model as usize], &self.device);
        let call = Call::Table { spec: *spec, start };
        let t = self.primitive(empty, "the table")?;
        check_call(
            &self.posenc,
            &call,
            std::slice::from_ref(&t),
            &Positions::Start(0),
        )?;
        let mut out = <Cube as Route>::run(self, call, vec![t], Positions::Start(0))?;
        Ok(Tensor::from_primitive::<Cube>(out.remove(0)))
    }

    /// Runs `call` on `N` rank-4 float tensors at `positions`, returning its `N` outputs.
    fn run<const N: usize>(
        &self,
        call: Call,
        tensors: [Tensor<4>; N],
        positions: Positions<Tensor<1, Int>>,
    ) -> Result<[Tensor<4>; N]> {
        let names = crate::checks::names(&call);
        let mut prims = Vec::with_capacity(N);
        for (t, &what) in tensors.into_iter().zip(names) {
            prims.push(self.primitive(t, what)?);
        }
        let positions = self.positions(positions)?;
        check_call(&self.posenc, &call, &prims, &positions)?;
        let out = <Cube as Route>::run(self, call, prims, positions)?;
        let out: Vec<Tensor<4>> = out
            .into_iter()
            .map(Tensor::from_primitive::<Cube>)
            .collect();
        out.try_into()
            .map_err(|_| Error::Runtime("the bridge's call returned another count".into()))
    }

    /// The primitives of position arrays, each checked to be on the bridge's device.
    fn positions(
        &self,
        positions: Positions<Tensor<1, Int>>,
    ) -> Result<Positions<<Int as BackendPrimitive<Cube>>::Primitive>> {
        positions.try_map_arrays(|t| self.primitive(t, "positions"))
    }

    /// The primitive of `x` (float or int) on burn's `Cube` backend, checked to be on this
    /// bridge's device.
    fn primitive<const D: usize, K>(
        &self,
        x: Tensor<D, K>,
        what: &'static str,
    ) -> Result<<K as BackendPrimitive<Cube>>::Primitive>
    where
        K: Basic + BackendPrimitive<Cube>,
    {
        if x.device() != self.device {
            return Err(Error::OtherDevice {
                what,
                found: format!("{:?}", x.device()),
                ours: format!("{:?}", self.device),
            });
        }
        x.try_into_primitive::<Cube>().map_err(|e| Error::NotWgpu {
            what,
            detail: format!("{e:?}"),
        })
    }
}
