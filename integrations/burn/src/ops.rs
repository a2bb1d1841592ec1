//! The bridge's operations on CubeCL tensors: what runs at the call without fusion, and
//! inside burn's fusion executor with it (`fusion.rs`). Each binds the tensors' own buffers,
//! submits burn's queued work on the current stream, then records and submits the kernel on
//! the same queue.

use burn::backend::TensorMetadata;
use burn::backend::wgpu::{CubeTensor, wgpu};
use burn_cubecl::kernel::{into_contiguous, slice};
use wgpu_posenc::{
    CacheIndex, KvCache, Positions, QkNorm, QkvCall, Rope, RopeCall, SinusoidalSpec, TensorView,
};

use crate::bind::layout_of;
use crate::{BurnPosEnc, Error, Result};

/// One operation of the bridge, with what it takes besides its tensors. Its tensors come
/// and go in the order each variant says.
#[derive(Clone, Debug)]
pub(crate) enum Call {
    /// RoPE over one tensor: `[x]` to `[x rotated]`.
    Rope(Rope),
    /// RoPE over Q and K in one dispatch: `[q, k]` to `[q, k]`.
    Qk(Rope),
    /// The fused QKV call: `[qkv, k_cache, v_cache]` to `[q, k_cache, v_cache]`.
    Qkv {
        rope: Rope,
        kv_heads: u64,
        norm: Option<QkNorm>,
    },
    /// The sinusoidal table, written into a new tensor: `[table]` to `[table]`.
    Table { spec: SinusoidalSpec, start: u32 },
}

/// What becomes of a tensor the kernels cannot bind where it lies (strided rows, a broadcast
/// axis, tiled storage).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unbindable {
    /// [`Error::Layout`], at the call: the caller can make it contiguous.
    Refuse,
    /// A contiguous copy first, inside burn's fusion executor, where the layout is known only
    /// when the operation runs (the result is the same; the copy is one more pass).
    Copy,
}

impl BurnPosEnc {
    /// Runs `call` on CubeCL tensors (see [`Call`] for their order).
    pub(crate) fn run_cube(
        &self,
        call: &Call,
        tensors: Vec<CubeTensor>,
        positions: Positions<CubeTensor>,
        unbindable: Unbindable,
    ) -> Result<Vec<CubeTensor>> {
        let mut tensors = tensors.into_iter();
        let mut next = || {
            let t = tensors.next().ok_or_else(|| {
                Error::Runtime(format!("the bridge's {call:?} is missing a tensor"))
            })?;
            Ok::<_, Error>(bindable(t, unbindable))
        };
        let positions = positions.map(|p| bindable_ids(p, unbindable));
        match call {
            Call::Rope(rope) => Ok(vec![self.rope_cube(rope, next()?, positions)?]),
            Call::Qk(rope) => {
                let (q, k) = (next()?, next()?);
                let (q, k) = self.qk_cube(rope, q, k, positions)?;
                Ok(vec![q, k])
            }
            Call::Qkv {
                rope,
                kv_heads,
                norm,
            } => {
                let (x, k, v) = (next()?, next()?, next()?);
                let out = self.qkv_cube(rope, x, *kv_heads, positions, [k, v], norm.as_ref())?;
                Ok(out.to_vec())
            }
            Call::Table { spec, start } => Ok(vec![self.table_cube(spec, next()?, *start)?]),
        }
    }

    /// RoPE over `x`, in place when it alone holds its buffer, else into a new tensor.
    fn rope_cube(
        &self,
        rope: &Rope,
        x: CubeTensor,
        positions: Positions<CubeTensor>,
    ) -> Result<CubeTensor> {
        let out = (!x.can_mut()).then(|| empty_like(&x));
        let positions = self.bind_positions(positions, &x)?;
        let bx = self.bind(&x, "x")?;
        let bo = out.as_ref().map(|o| self.bind(o, "x")).transpose()?;
        let mut call = RopeCall::new(bx.view(), positions.views());
        if let Some(o) = &bo {
            call = call.with_output(o.view());
        }
        self.submit(&x, |e| {
            positions.record_copies(e);
            rope.encode_call(e, &call).map(drop)
        })?;
        Ok(out.unwrap_or(x))
    }

    /// Q and K in one dispatch when both alone hold their buffers, else each on its own.
    fn qk_cube(
        &self,
        rope: &Rope,
        q: CubeTensor,
        k: CubeTensor,
        positions: Positions<CubeTensor>,
    ) -> Result<(CubeTensor, CubeTensor)> {
        if !q.can_mut() || !k.can_mut() {
            let again = positions.as_ref().map(CubeTensor::clone);
            return Ok((
                self.rope_cube(rope, q, positions)?,
                self.rope_cube(rope, k, again)?,
            ));
        }
        let positions = self.bind_positions(positions, &q)?;
        let (bq, bk) = (self.bind(&q, "q")?, self.bind(&k, "k")?);
        let call = RopeCall::new(bq.view(), positions.views()).with_k(bk.view());
        self.submit(&q, |e| {
            positions.record_copies(e);
            rope.encode_call(e, &call).map(drop)
        })?;
        drop((bq, bk));
        Ok((q, k))
    }

    /// The fused QKV call; returns Q (the first `q_heads` heads of `x` rewritten in place, or
    /// a new tensor) and the caches, written in place.
    fn qkv_cube(
        &self,
        rope: &Rope,
        x: CubeTensor,
        kv_heads: u64,
        positions: Positions<CubeTensor>,
        [k, v]: [CubeTensor; 2],
        norm: Option<&QkNorm>,
    ) -> Result<[CubeTensor; 3]> {
        for (t, what) in [(&k, "the K cache"), (&v, "the V cache")] {
            if !t.can_mut() {
                return Err(Error::Shared { what });
            }
        }
        let shape = x.shape();
        let q_heads = (shape[1] as u64).saturating_sub(kv_heads.saturating_mul(2)) as usize;
        let q_dims = [shape[0], q_heads, shape[2], shape[3]];
        let out = (!x.can_mut()).then(|| empty(&x, &q_dims));
        let positions = self.bind_positions(positions, &x)?;
        let bx = self.bind(&x, "qkv")?;
        let bo = out.as_ref().map(|o| self.bind(o, "Q out")).transpose()?;
        let (bk, bv) = (self.bind(&k, "the K cache")?, self.bind(&v, "the V cache")?);
        let cache = KvCache {
            k: bk.view(),
            v: bv.view(),
            index: CacheIndex::Position,
            overflow_flag: None,
        };
        let mut call = QkvCall::new(bx.view(), kv_heads, positions.views(), cache);
        if let Some(o) = &bo {
            call = call.with_q_out(o.view());
        }
        if let Some(norm) = norm {
            call = call.with_qk_norm(norm);
        }
        self.submit(&x, |e| {
            positions.record_copies(e);
            rope.encode_qkv(e, &call).map(drop)
        })?;
        drop((bx, bo, bk, bv));
        let q = match out {
            Some(o) => o,
            // Q is the first q_heads heads of the packed tensor, rewritten in place.
            None => slice(x, &q_dims.map(|n| 0..n)),
        };
        Ok([q, k, v])
    }

    /// The sinusoidal table written into `t`, a new `[seq, d_model]` tensor.
    fn table_cube(&self, spec: &SinusoidalSpec, t: CubeTensor, start: u32) -> Result<CubeTensor> {
        let b = self.bind_rows(&t)?;
        let view = TensorView::new(&b.buffer, b.layout).with_dtype(b.dtype);
        self.submit(&t, |e| {
            self.posenc
                .encode_sinusoidal_table(e, spec, &view, start)
                .map(drop)
        })?;
        drop(b);
        Ok(t)
    }

    /// Submits burn's queued work on the current thread's stream (every tensor of a call is
    /// on the bridge's one device: `x`'s client is theirs), then what `encode` records.
    fn submit(
        &self,
        x: &CubeTensor,
        encode: impl FnOnce(&mut wgpu::CommandEncoder) -> wgpu_posenc::Result<()>,
    ) -> Result<()> {
        x.client
            .flush()
            .map_err(|e| Error::Runtime(format!("{e:?}")))?;
        let device = self.posenc.device();
        let mut encoder = device.create_command_encoder(&Default::default());
        encode(&mut encoder)?;
        self.posenc.queue().submit([encoder.finish()]);
        Ok(())
    }
}

/// `x`, or a contiguous copy of it where the kernels cannot bind it and `mode` says copy.
fn bindable(x: CubeTensor, mode: Unbindable) -> CubeTensor {
    if mode == Unbindable::Copy && layout_of(&x, "").is_err() && x.shape().len() == 4 {
        into_contiguous(x)
    } else {
        x
    }
}

/// A position array, made contiguous where it is not and `mode` says copy.
fn bindable_ids(p: CubeTensor, mode: Unbindable) -> CubeTensor {
    let strided = p.meta.is_tiled() || (p.shape()[0] > 1 && p.meta.strides()[0] != 1);
    if mode == Unbindable::Copy && strided {
        into_contiguous(p)
    } else {
        p
    }
}

/// A new contiguous tensor of `x`'s dtype and shape.
fn empty_like(x: &CubeTensor) -> CubeTensor {
    let shape = x.shape();
    empty(x, &[shape[0], shape[1], shape[2], shape[3]])
}

/// A new contiguous tensor of `x`'s dtype, client and device with `dims`.
fn empty(x: &CubeTensor, dims: &[usize; 4]) -> CubeTensor {
    let bytes = dims.iter().product::<usize>() * x.dtype.size();
    let handle = x.client.empty(bytes);
    CubeTensor::new_contiguous(
        x.client.clone(),
        x.device.clone(),
        dims.to_vec().into(),
        handle,
        x.dtype,
    )
}
