//! What is checked at the call, from the tensors' shapes, dtypes and sharing alone, with or
//! without fusion: with fusion the kernels run later, inside burn's executor, where an error
//! could no longer be returned to the caller, so everything that can be known at the call is
//! checked here, with the kernels' own error variants. (Without fusion the kernels check it
//! all again on the bound views.)

use burn::backend::TensorMetadata;
use wgpu_posenc::Error as PosEncError;
use wgpu_posenc::{PosEnc, Positions};

use crate::bind::{check_ids_dtype, float_dtype};
use crate::ops::Call;
use crate::{Error, Result};

/// The names of a call's tensors, in the order [`Call`] gives them.
pub(crate) fn names(call: &Call) -> &'static [&'static str] {
    match call {
        Call::Rope(_) => &["x"],
        Call::Qk(_) => &["q", "k"],
        Call::Qkv { .. } => &["qkv", "the K cache", "the V cache"],
        Call::Table { .. } => &["the table"],
    }
}

/// Checks `call` on its tensors and positions, for the kernels on `posenc`'s device, before
/// anything runs.
pub(crate) fn check_call<T: TensorMetadata>(
    posenc: &PosEnc,
    call: &Call,
    tensors: &[T],
    positions: &Positions<T>,
) -> Result<()> {
    let names = names(call);
    if tensors.len() != names.len() {
        return Err(Error::Runtime(format!(
            "the bridge's {call:?} got {} tensors",
            tensors.len()
        )));
    }
    for (t, &what) in tensors.iter().zip(names) {
        // The device's features too: with fusion, f16 on a device without f16 shaders
        // would otherwise fail only when burn's executor runs the call.
        posenc.check_dtype(float_dtype(t.dtype(), what)?)?;
    }
    let dims = |t: &T| -> [u64; 4] {
        let s = t.shape();
        std::array::from_fn(|i| s.get(i).copied().unwrap_or(1) as u64)
    };
    let x = dims(&tensors[0]);
    let mut ids_ok = Ok(());
    positions.as_ref().map(|p| {
        if ids_ok.is_ok() {
            ids_ok = check_ids_dtype(p.dtype());
        }
    });
    ids_ok?;
    positions.check_counts(x[0], x[2], |p| p.shape()[0] as u64)?;
    if let Positions::Start(start) = positions
        && u64::from(*start) + x[2] > 1 << 32
    {
        return Err(PosEncError::PositionOverflow {
            start: u64::from(*start),
            seq: x[2],
        }
        .into());
    }
    match call {
        Call::Rope(rope) => head_dim(rope.head_dim(), x[3]),
        Call::Qk(rope) => {
            let k = dims(&tensors[1]);
            head_dim(rope.head_dim(), x[3])?;
            head_dim(rope.head_dim(), k[3])?;
            if [k[0], k[2]] != [x[0], x[2]] {
                return Err(PosEncError::ShapeMismatch {
                    what: "Q and K must have the same batch and seq",
                    a: x,
                    b: k,
                }
                .into());
            }
            Ok(())
        }
        Call::Qkv {
            rope,
            kv_heads,
            norm,
        } => {
            head_dim(rope.head_dim(), x[3])?;
            check_qkv(x, *kv_heads, tensors)?;
            match norm {
                Some(norm) => Ok(norm.check(x[3])?),
                None => Ok(()),
            }
        }
        Call::Table { spec, .. } => Ok(spec.validate()?),
    }
}

fn head_dim(spec: u64, tensor: u64) -> Result<()> {
    if spec != tensor {
        return Err(PosEncError::DimMismatch { spec, tensor }.into());
    }
    Ok(())
}

/// The fused call's heads and caches, as `Rope::encode_qkv` checks them.
fn check_qkv<T: TensorMetadata>(x: [u64; 4], kv: u64, tensors: &[T]) -> Result<()> {
    for (t, what) in tensors[1..].iter().zip(["the K cache", "the V cache"]) {
        if !t.can_mut() {
            return Err(Error::Shared { what });
        }
    }
    let [batch, heads, _, d] = x;
    let q_heads = heads.saturating_sub(kv.saturating_mul(2));
    if kv == 0 || q_heads == 0 || q_heads + 2 * kv != heads || !d.is_multiple_of(2) {
        return Err(PosEncError::Unsupported(
            "the fused QKV call needs qkv [batch, q_heads + 2 kv_heads, seq, head_dim] with at \
             least one Q and one KV head and an even head_dim",
        )
        .into());
    }
    let shape = |t: &T| -> [u64; 4] { std::array::from_fn(|i| t.shape()[i] as u64) };
    let (k, v) = (shape(&tensors[1]), shape(&tensors[2]));
    if [k[0], k[1], k[3]] != [batch, kv, d] || v != k {
        return Err(PosEncError::ShapeMismatch {
            what: "the K and V caches must be [batch, kv_heads, len, head_dim]",
            a: k,
            b: [batch, kv, k[2].max(v[2]), d],
        }
        .into());
    }
    if tensors[1].dtype() != tensors[2].dtype() {
        return Err(PosEncError::Unsupported(
            "the K and V caches must have the same strides and dtype (their offsets and buffers \
             may differ)",
        )
        .into());
    }
    Ok(())
}
