//! The bridge on burn's fused backend (`Fusion<CubeBackend>`, burn's default): a call is
//! checked at once (`checks.rs`), then registered in the fusion stream as a custom operation,
//! as burn's own extensions are (burn-signal's FFT). burn's fuser treats it as opaque: the
//! fused block before it ends there, and when the stream executes it, on the stream that ran
//! burn's earlier work, it resolves its tensors to CubeCL tensors and runs the bridge's
//! operation on them (`ops.rs`) — the kernel after burn's earlier work, burn's later work
//! after the kernel, and the calling thread never waits.
//!
//! In place or not is decided by the stream too: an input whose handle this operation holds
//! the last use of comes out unique (written in place), one a clone still reads comes out
//! shared (written into a new tensor). A layout the kernels cannot bind, known only then, is
//! copied contiguous first. An error the checks at the call cannot foresee (a tensor past
//! one storage binding) is burn's `ExecutionError` for the operation's outputs, not a panic.

use std::marker::PhantomData;

use burn::backend::BackendTypes;
use burn::backend::wgpu::CubeTensor;
use burn_fusion::custom::{
    CustomOpIr, HandleContainer, Operation, OperationIr, StreamId, TensorIr,
};
use burn_fusion::{ExecutionError, Fusion, FusionBackend, FusionRuntime, FusionTensor};
use wgpu_posenc::Positions;

use crate::ops::{Call, Unbindable};
use crate::route::Route;
use crate::{BurnPosEnc, Error, Result};

/// The bridge's operation as the fusion stream holds it until it runs.
#[derive(Debug)]
struct Deferred<B> {
    desc: CustomOpIr,
    bridge: BurnPosEnc,
    call: Call,
    /// Where each position array is among the inputs (after the float tensors).
    positions: Positions<usize>,
    _backend: PhantomData<B>,
}

impl<B> Operation<B::FusionRuntime> for Deferred<B>
where
    B: FusionBackend
        + BackendTypes<FloatTensorPrimitive = CubeTensor, IntTensorPrimitive = CubeTensor>,
{
    fn execute(
        &self,
        handles: &mut HandleContainer<<B::FusionRuntime as FusionRuntime>::FusionHandle>,
    ) -> Result<(), ExecutionError> {
        let inputs = &self.desc.inputs;
        let floats = inputs.len() - positions_count(&self.positions);
        let tensors = inputs[..floats]
            .iter()
            .map(|ir| handles.get_float_tensor::<B>(ir))
            .collect();
        let positions = self
            .positions
            .as_ref()
            .map(|&i| handles.get_int_tensor::<B>(&inputs[i]));
        let outputs = self
            .bridge
            .run_cube(&self.call, tensors, positions, Unbindable::Copy)
            .map_err(|e| ExecutionError::WithContext {
                reason: format!("wgpu-posenc-burn: {e}"),
            })?;
        for (ir, t) in self.desc.outputs.iter().zip(outputs) {
            handles.register_float_tensor::<B>(&ir.id, t);
        }
        Ok(())
    }
}

impl<B> Route for Fusion<B>
where
    B: FusionBackend
        + BackendTypes<FloatTensorPrimitive = CubeTensor, IntTensorPrimitive = CubeTensor>,
{
    fn run(
        bridge: &BurnPosEnc,
        call: Call,
        tensors: Vec<FusionTensor<B::FusionRuntime>>,
        positions: Positions<FusionTensor<B::FusionRuntime>>,
    ) -> Result<Vec<FusionTensor<B::FusionRuntime>>> {
        let client = tensors
            .first()
            .map(|t| t.client.clone())
            .ok_or_else(|| Error::Runtime(format!("the bridge's {call:?} has no tensor")))?;
        // Every output has the shape and dtype of the input in its place, but Q of the fused
        // call, which is its first q_heads heads.
        let outputs: Vec<TensorIr> = tensors
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut shape = t.shape.clone();
                if let (0, Call::Qkv { kv_heads, .. }) = (i, &call) {
                    shape[1] = shape[1].saturating_sub(kv_heads.saturating_mul(2) as usize);
                }
                TensorIr::uninit(client.create_empty_handle(), shape, t.dtype)
            })
            .collect();
        let mut inputs: Vec<TensorIr> = tensors.into_iter().map(FusionTensor::into_ir).collect();
        let positions = positions.map(|p| {
            inputs.push(p.into_ir());
            inputs.len() - 1
        });
        let desc = CustomOpIr::new(op_id(&call), &inputs, &outputs);
        let op = Deferred::<B> {
            desc: desc.clone(),
            bridge: bridge.clone(),
            call,
            positions,
            _backend: PhantomData,
        };
        Ok(client.register(StreamId::current(), OperationIr::Custom(desc), op))
    }
}

/// How many arrays `positions` has.
fn positions_count(positions: &Positions<usize>) -> usize {
    let mut n = 0;
    positions.as_ref().map(|_| n += 1);
    n
}

/// The operation's name in burn's IR.
fn op_id(call: &Call) -> &'static str {
    match call {
        Call::Rope(_) => "wgpu-posenc::rope",
        Call::Qk(_) => "wgpu-posenc::rope_qk",
        Call::Qkv { .. } => "wgpu-posenc::qkv",
        Call::Table { .. } => "wgpu-posenc::sinusoidal_table",
    }
}
