//! Convenience for host slices: upload, encode, submit, wait, read back.
//!
//! Written once, async: on the web the wait is the browser's (`mapAsync` resolving), on
//! native it is `device.poll(Wait)` in the awaiting task. The blocking forms of the front
//! (`PosEnc::rope_host` and the rest) run these under `pollster::block_on`, native only.

use crate::error::{Error, Result};
use crate::kernels::device::Passes;
use crate::positions::{HostPositions, Positions};
use crate::tensor::{ArrayView, Layout, TensorView};

impl Passes {
    /// Checks and uploads host `positions` for a view laid out as `layout`, uploads `data`,
    /// lets `encode` record work on the view and the uploaded positions, submits, and reads
    /// `data` back.
    pub(crate) async fn in_place_at_positions(
        &self,
        layout: Layout,
        data: &mut [f32],
        positions: HostPositions<'_>,
        encode: impl FnOnce(
            &Self,
            &mut wgpu::CommandEncoder,
            TensorView<'_>,
            Positions<ArrayView<'_>>,
        ) -> Result<()>,
    ) -> Result<()> {
        let uploaded = self.upload_positions(positions, &layout)?;
        self.run_in_place(layout, data, |ctx, encoder, buffer| {
            let positions = uploaded.as_ref().map(ArrayView::new);
            encode(ctx, encoder, TensorView::new(buffer, layout), positions)
        })
        .await
    }

    /// A new f32 tensor of `layout` (zeros), `encode` recorded on it, read back.
    pub(crate) async fn fill_new(
        &self,
        what: &'static str,
        layout: Layout,
        encode: impl FnOnce(&Self, &mut wgpu::CommandEncoder, TensorView<'_>) -> Result<()>,
    ) -> Result<Vec<f32>> {
        let len = layout.end()?;
        // Before allocating: the tensor must fit one buffer of the device.
        self.check_buffer_size(what, len.saturating_mul(size_of::<f32>() as u64))?;
        let mut data = vec![0.0f32; len as usize];
        self.run_in_place(layout, &mut data, |ctx, encoder, buffer| {
            encode(ctx, encoder, TensorView::new(buffer, layout))
        })
        .await?;
        Ok(data)
    }

    /// [`Passes::fill_new`] with host positions uploaded for `encode`.
    pub(crate) async fn fill_new_at_positions(
        &self,
        what: &'static str,
        layout: Layout,
        positions: HostPositions<'_>,
        encode: impl FnOnce(
            &Self,
            &mut wgpu::CommandEncoder,
            TensorView<'_>,
            Positions<ArrayView<'_>>,
        ) -> Result<()>,
    ) -> Result<Vec<f32>> {
        let uploaded = self.upload_positions(positions, &layout)?;
        self.fill_new(what, layout, |ctx, encoder, table| {
            encode(ctx, encoder, table, uploaded.as_ref().map(ArrayView::new))
        })
        .await
    }

    /// Host positions checked for a view of `layout`, then uploaded into buffers.
    fn upload_positions(
        &self,
        positions: HostPositions<'_>,
        layout: &Layout,
    ) -> Result<Positions<wgpu::Buffer>> {
        check_host_positions(&positions, layout)?;
        positions.try_map(0, 0, |v, _| self.upload(v, "wgpu-posenc positions"))
    }

    fn upload(&self, data: &[u32], label: &'static str) -> Result<wgpu::Buffer> {
        // A binding needs at least one word.
        let contents: &[u8] = if data.is_empty() {
            &[0; 4]
        } else {
            bytemuck::cast_slice(data)
        };
        self.buffer_init(label, contents, wgpu::BufferUsages::STORAGE)
    }

    /// Uploads `data`, lets `encode` record work on it, and reads it back into `data`.
    async fn run_in_place(
        &self,
        layout: Layout,
        data: &mut [f32],
        encode: impl FnOnce(&Self, &mut wgpu::CommandEncoder, &wgpu::Buffer) -> Result<()>,
    ) -> Result<()> {
        let needed = layout.end()?;
        if (data.len() as u64) < needed {
            return Err(Error::HostLength {
                needed,
                got: data.len() as u64,
            });
        }
        if data.is_empty() {
            // Validate all the same: the spec may be wrong even for an empty tensor.
            let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("wgpu-posenc empty"),
                size: 16,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            });
            let mut encoder = self.device.create_command_encoder(&Default::default());
            encode(self, &mut encoder, &buffer)?;
            return self.settle().await;
        }
        let bytes = std::mem::size_of_val(data) as u64;
        let buffer = self.buffer_init(
            "wgpu-posenc host data",
            bytemuck::cast_slice(data),
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        )?;
        let staging = self.scoped("wgpu-posenc readback", || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("wgpu-posenc readback"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("wgpu-posenc host"),
            });
        encode(self, &mut encoder, &buffer)?;
        encoder.copy_buffer_to_buffer(&buffer, 0, &staging, 0, bytes);
        self.queue.submit([encoder.finish()]);
        self.read_mapped(&staging, data).await
    }

    /// Maps `staging` (already holding the result, or about to once the queue drains) and
    /// copies it into `out`.
    pub(crate) async fn read_mapped(&self, staging: &wgpu::Buffer, out: &mut [f32]) -> Result<()> {
        let bytes = self.map_bytes(staging).await?;
        let n = out.len().min(bytes.len() / 4);
        out[..n].copy_from_slice(&bytemuck::cast_slice(&bytes[..n * 4])[..n]);
        Ok(())
    }

    /// Maps `staging` (`MAP_READ`) once the queue has drained and returns its bytes. First
    /// the device's verdict on what was made for the work (see [`Passes::settle`]).
    async fn map_bytes(&self, staging: &wgpu::Buffer) -> Result<Vec<u8>> {
        self.settle().await?;
        let slice = staging.slice(..);
        let (sender, receiver) = futures_intrusive::channel::shared::oneshot_channel();
        slice.map_async(wgpu::MapMode::Read, move |result| {
            // The receiver waits below; it cannot have gone away.
            let _ = sender.send(result);
        });
        // Native: the callback runs in this poll. The web: the browser runs it once the
        // mapping resolves, and the await below yields to it.
        #[cfg(not(target_arch = "wasm32"))]
        self.device.poll(wgpu::PollType::wait_indefinitely())?;
        match receiver.receive().await {
            Some(result) => result?,
            None => {
                return Err(Error::Device {
                    what: "reading back",
                    message: "the buffer's map callback did not run".into(),
                });
            }
        }
        let bytes = slice.get_mapped_range()?.to_vec();
        staging.unmap();
        Ok(bytes)
    }

    /// The contents of `buffer` (which needs `COPY_SRC`), after everything submitted before.
    pub(crate) async fn read_buffer(&self, buffer: &wgpu::Buffer) -> Result<Vec<u8>> {
        if !buffer.usage().contains(wgpu::BufferUsages::COPY_SRC) {
            return Err(Error::MissingUsage {
                what: "the buffer to read",
                missing: wgpu::BufferUsages::COPY_SRC,
            });
        }
        let staging = self.scoped("wgpu-posenc readback", || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("wgpu-posenc readback"),
                size: buffer.size(),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        let mut encoder = self.device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, buffer.size());
        self.queue.submit([encoder.finish()]);
        self.map_bytes(&staging).await
    }

    /// Waits until everything submitted so far has run.
    pub(crate) async fn wait_idle(&self) -> Result<()> {
        #[cfg(not(target_arch = "wasm32"))]
        self.device.poll(wgpu::PollType::wait_indefinitely())?;
        #[cfg(target_arch = "wasm32")]
        {
            let (sender, receiver) = futures_intrusive::channel::shared::oneshot_channel();
            self.queue.on_submitted_work_done(move || {
                let _ = sender.send(());
            });
            if receiver.receive().await.is_none() {
                return Err(Error::Device {
                    what: "waiting for the queue",
                    message: "the queue's completion callback did not run".into(),
                });
            }
        }
        self.settle().await
    }
}

/// What the GPU cannot check about positions it reads, checked on the host: per-row starts
/// and varlen offsets that would run past `u32::MAX`, and `cu_seqlens` that are not
/// non-decreasing from 0 to the token count. (Array lengths are checked by the encode call.)
fn check_host_positions(positions: &HostPositions<'_>, layout: &Layout) -> Result<()> {
    let seq = layout.shape[2];
    // Before anything is uploaded: an empty slice would otherwise become one zero word.
    positions.check_lengths(layout.shape[0], seq)?;
    positions.check_values()?;
    let past = |start: u32, len: u64| {
        len > 0 && u64::from(start).saturating_add(len - 1) > u64::from(u32::MAX)
    };
    match *positions {
        HostPositions::BatchStarts(starts) => {
            if let Some(&start) = starts.iter().find(|&&start| past(start, seq)) {
                return Err(Error::PositionOverflow {
                    start: u64::from(start),
                    seq,
                });
            }
        }
        HostPositions::Varlen {
            cu_seqlens,
            num_seqs,
            offsets,
        } => {
            // check_lengths saw num_seqs + 1 values.
            let cu_seqlens = &cu_seqlens[..=num_seqs as usize];
            let ordered = cu_seqlens.first() == Some(&0)
                && cu_seqlens.windows(2).all(|w| w[0] <= w[1])
                && cu_seqlens.last().map(|&l| u64::from(l)) == Some(seq);
            if !ordered {
                return Err(Error::PositionsMismatch(
                    "cu_seqlens must start at 0, never decrease, and end at the view's token count",
                ));
            }
            if let Some(offsets) = offsets {
                for (w, &offset) in cu_seqlens.windows(2).zip(offsets) {
                    let len = u64::from(w[1] - w[0]);
                    if past(offset, len) {
                        return Err(Error::PositionOverflow {
                            start: u64::from(offset),
                            seq: len,
                        });
                    }
                }
            }
        }
        _ => {}
    }
    Ok(())
}
