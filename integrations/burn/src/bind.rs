//! Binding a CubeCL tensor: its wgpu buffer, its offset in CubeCL's pool page and its
//! strides as a view of the kernels, and position arrays copied into the bridge's buffer.

use burn::backend::TensorMetadata;
use burn::backend::wgpu::{CubeTensor, wgpu};
use burn::cubecl::wgpu::{AutoCompiler, WgpuServer};
use burn::tensor::DType;
use wgpu_posenc::{ArrayView, Dtype, Layout, Positions, TensorView};

use crate::{BurnPosEnc, Error, Result};

/// A tensor's buffer as the bridge binds it: CubeCL's guard keeps the allocation from being
/// freed, handed out again or moved while it is held.
pub(crate) struct Bound {
    _guard: Box<dyn std::any::Any>,
    pub buffer: wgpu::Buffer,
    pub layout: Layout,
    pub dtype: Dtype,
}

impl Bound {
    /// The kernels' view of the bound tensor.
    pub fn view(&self) -> TensorView<'_> {
        TensorView::new(&self.buffer, self.layout).with_dtype(self.dtype)
    }
}

/// Positions whose arrays are bound, and where each goes in the scratch buffer.
pub(crate) struct BoundPositions {
    arrays: Vec<(CubeTensor, Bound)>,
    at: Vec<u64>,
    scratch: wgpu::Buffer,
    shape: Positions<usize>,
}

impl BurnPosEnc {
    /// `x`'s buffer, offset and strides as a view of `[batch, heads, seq, head_dim]`.
    pub(crate) fn bind(&self, x: &CubeTensor, what: &'static str) -> Result<Bound> {
        let dtype = float_dtype(x.dtype, what)?;
        let layout = layout_of(x, what)?;
        self.bound(x, dtype, layout, what)
    }

    /// A contiguous `[rows, cols]` tensor as rows of a view.
    pub(crate) fn bind_rows(&self, x: &CubeTensor) -> Result<Bound> {
        let dtype = float_dtype(x.dtype, "the table")?;
        let shape = x.shape();
        let layout = Layout::rows(shape[0] as u64, shape[1] as u64);
        self.bound(x, dtype, layout, "the table")
    }

    fn bound(
        &self,
        x: &CubeTensor,
        dtype: Dtype,
        mut layout: Layout,
        what: &'static str,
    ) -> Result<Bound> {
        let managed = x
            .client
            .get_resource::<WgpuServer<AutoCompiler>>(x.handle.clone())
            .map_err(|e| Error::NotWgpu {
                what,
                detail: format!("{e:?}"),
            })?;
        let resource = managed.resource();
        let size = x.dtype.size() as u64;
        if resource.offset % size != 0 {
            return Err(Error::Runtime(format!(
                "{what} starts at byte {} of its buffer, not a whole element",
                resource.offset
            )));
        }
        layout.offset += resource.offset / size;
        let buffer = resource.buffer.clone();
        Ok(Bound {
            _guard: Box::new(managed),
            buffer,
            layout,
            dtype,
        })
    }

    /// Positions from CubeCL int tensors, as u32 arrays copied into the bridge's own buffer
    /// before the dispatch: CubeCL pools small tensors in the buffers of large ones, and
    /// WebGPU refuses one buffer bound read-only (the positions) and writable (the tensor)
    /// in one dispatch. The copy is a few bytes a token; calls on the queue are ordered, so
    /// the buffer is reused from call to call. `x` is the tensor they position.
    pub(crate) fn bind_positions(
        &self,
        positions: Positions<CubeTensor>,
        x: &CubeTensor,
    ) -> Result<BoundPositions> {
        // The kernels check an array against its buffer, here the scratch buffer: the counts
        // are checked against the tensors first.
        let shape = x.shape();
        positions.check_counts(shape[0] as u64, shape[2] as u64, |t| t.shape()[0] as u64)?;
        let mut arrays = Vec::new();
        let shape = positions.try_map_arrays(|t| {
            arrays.push(self.bind_ids(t)?);
            Ok::<_, Error>(arrays.len() - 1)
        })?;
        // Each array at a multiple of 256 bytes (WebGPU's storage offset alignment), at
        // least one word long.
        let mut at = Vec::new();
        let mut end = 0u64;
        for (p, _) in &arrays {
            at.push(end);
            end += ((p.shape()[0] as u64 * 4).max(4)).next_multiple_of(256);
        }
        let scratch = self.scratch(end.max(256))?;
        Ok(BoundPositions {
            arrays,
            at,
            scratch,
            shape,
        })
    }

    /// The scratch buffer, grown to at least `bytes`.
    fn scratch(&self, bytes: u64) -> Result<wgpu::Buffer> {
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = scratch.as_ref().filter(|b| b.size() >= bytes) {
            return Ok(b.clone());
        }
        let limit = self.posenc.device().limits().max_buffer_size;
        let size = bytes.next_power_of_two().max(4096).min(limit);
        if size < bytes {
            return Err(Error::Runtime(format!(
                "position arrays of {bytes} bytes pass the device's largest buffer ({limit})"
            )));
        }
        let buffer = self.posenc.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgpu-posenc-burn positions"),
            size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        *scratch = Some(buffer.clone());
        Ok(buffer)
    }

    fn bind_ids(&self, p: CubeTensor) -> Result<(CubeTensor, Bound)> {
        let what = "positions";
        check_ids_dtype(p.dtype)?;
        let strides = p.meta.strides();
        if p.meta.is_tiled() || (p.shape()[0] > 1 && strides[0] != 1) {
            return Err(Error::Layout {
                what,
                shape: p.shape().to_vec(),
                strides: strides.to_vec(),
                why: "positions must be contiguous",
            });
        }
        let b = self.bound(&p, Dtype::F32, Layout::rows(1, p.shape()[0] as u64), what)?;
        Ok((p, b))
    }
}

impl BoundPositions {
    /// The arrays as the kernels read them: in the scratch buffer.
    pub fn views(&self) -> Positions<ArrayView<'_>> {
        self.shape
            .as_ref()
            .map(|&i| ArrayView::at(&self.scratch, self.at[i]))
    }

    /// Copies each array from its tensor into the scratch buffer.
    pub fn record_copies(&self, encoder: &mut wgpu::CommandEncoder) {
        for ((p, b), &at) in self.arrays.iter().zip(&self.at) {
            let bytes = p.shape()[0] as u64 * 4;
            if bytes > 0 {
                encoder.copy_buffer_to_buffer(
                    &b.buffer,
                    b.layout.offset * 4,
                    &self.scratch,
                    at,
                    bytes,
                );
            }
        }
    }
}

/// Position arrays are i32 or u32.
pub(crate) fn check_ids_dtype(dtype: DType) -> Result<()> {
    if matches!(dtype, DType::I32 | DType::U32) {
        return Ok(());
    }
    Err(Error::Dtype {
        what: "positions",
        dtype,
        expected: "positions are i32 or u32 (Tensor::<1, Int>::from_data with an i32 device \
                   setting, or .cast(DType::U32))",
    })
}

/// The kernels' dtype of a float tensor.
pub(crate) fn float_dtype(dtype: DType, what: &'static str) -> Result<Dtype> {
    match dtype {
        DType::F32 => Ok(Dtype::F32),
        DType::F16 => Ok(Dtype::F16),
        DType::BF16 => Ok(Dtype::BF16),
        other => Err(Error::Dtype {
            what,
            dtype: other,
            expected: "the kernels take f32, f16 or bf16",
        }),
    }
}

/// The view of a rank-4 CubeCL tensor: its shape and its strides of batch, heads and seq
/// (the offset is the buffer's, added when bound).
pub(crate) fn layout_of(x: &CubeTensor, what: &'static str) -> Result<Layout> {
    let shape = x.meta.shape().to_vec();
    let strides = x.meta.strides().to_vec();
    let refuse = |why| Error::Layout {
        what,
        shape: shape.clone(),
        strides: strides.clone(),
        why,
    };
    if x.meta.is_tiled() {
        return Err(refuse("its storage is tiled"));
    }
    if shape.len() != 4 {
        return Err(refuse("it is not [batch, heads, seq, head_dim]"));
    }
    if shape[3] > 1 && strides[3] != 1 {
        return Err(refuse("its rows (the last axis) are not contiguous"));
    }
    // An empty tensor has nothing to overlap (burn gives its axes stride 0).
    let empty = shape.contains(&0);
    if !empty && (0..3).any(|a| shape[a] > 1 && strides[a] == 0) {
        return Err(refuse("an axis is broadcast (stride 0): its rows overlap"));
    }
    Ok(Layout {
        offset: 0,
        shape: [0, 1, 2, 3].map(|a| shape[a] as u64),
        strides: [0, 1, 2].map(|a| strides[a] as u64),
    })
}
