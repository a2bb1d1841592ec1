//! The bind groups of a pass or a fused call through the device's bounded cache, their
//! uniform buffer of per-dispatch parameters, and the packed frequency buffers: what a
//! repeated call finds again instead of allocating.

use std::sync::Arc;

use super::bind::{self, Access, Entry, Rules};
use super::cache::{BindCache, BindKey, BoundGroup, FrequencyMemo};
use super::device::Passes;
use super::plan::Params;
use crate::dd::Dd;
use crate::error::Result;

impl Passes {
    /// The parameters of each dispatch, one uniform-aligned slot apart.
    pub(crate) fn params_bytes<'p>(
        &self,
        params: impl ExactSizeIterator<Item = &'p Params>,
    ) -> Vec<u8> {
        let stride = self.param_stride() as usize;
        let mut bytes = vec![0u8; stride * params.len()];
        for (k, p) in params.enumerate() {
            bytes[k * stride..k * stride + size_of::<Params>()]
                .copy_from_slice(bytemuck::bytes_of(p));
        }
        bytes
    }

    fn param_stride(&self) -> u64 {
        (size_of::<Params>() as u64).next_multiple_of(self.uniform_align)
    }

    /// The bind groups of `key` (a pass of `blocks` blocks): from the cache when a recent
    /// pass had the same, else made (and cached when small).
    pub(crate) fn bind_groups_for(&self, key: BindKey, blocks: usize) -> Result<Arc<[BoundGroup]>> {
        let cacheable = blocks <= BindCache::MAX_BLOCKS
            && key
                .slots
                .iter()
                .flatten()
                .flatten()
                .all(|(b, _)| b.size() <= BindCache::MAX_BUFFER);
        if cacheable && let Some(hit) = self.bind_cache().get(&key) {
            return Ok(hit);
        }
        let bind_groups = self.bind_groups(&key)?;
        if cacheable {
            self.bind_cache().insert(key, bind_groups.clone());
        }
        Ok(bind_groups)
    }

    /// One bind group per block of `key`: its parameters, windows and dummies, each checked
    /// against WebGPU's rules (`kernels::bind`).
    fn bind_groups(&self, key: &BindKey) -> Result<Arc<[BoundGroup]>> {
        let param_stride = self.param_stride();
        let uniform = self.buffer_init(
            "wgpu-posenc params",
            &key.params,
            wgpu::BufferUsages::UNIFORM,
        )?;
        let rules = Rules {
            storage_align: self.storage_align,
            uniform_align: self.uniform_align,
            max_storage_binding: self.device.limits().max_storage_buffer_binding_size,
        };
        key.slots
            .iter()
            .enumerate()
            .map(|(k, slots)| {
                let entry = |binding, buffer: &wgpu::Buffer, (offset, size), access| Entry {
                    binding,
                    buffer: buffer.clone(),
                    offset,
                    size,
                    access,
                };
                let mut entries = vec![
                    entry(
                        0,
                        &uniform,
                        (k as u64 * param_stride, size_of::<Params>() as u64),
                        Access::Uniform,
                    ),
                    entry(2, &key.freq, (0, key.freq.size()), Access::ReadOnly),
                ];
                for (slot, binding) in slots.iter().zip(key.bindings()) {
                    let access = bind::access(binding);
                    let (buffer, window) = match slot {
                        Some((buffer, window)) => (buffer, *window),
                        // Read-only slots share a dummy; the two writable slots a call can
                        // leave unbound (the second tensor or Q out, 5, and the flag, 8) have
                        // one each: two writable bindings of one buffer must not meet, and a
                        // buffer cannot be bound read-only and writable in one dispatch. The
                        // K and V caches (9 and 10) are unbound only when empty.
                        None => {
                            let dummy = match (binding, access) {
                                (8, _) => &self.dummy_flag,
                                (9, _) => &self.dummy_kv[0],
                                (10, _) => &self.dummy_kv[1],
                                (_, Access::ReadWrite) => &self.dummy_rw,
                                _ => &self.dummy,
                            };
                            (dummy, (0, dummy.size()))
                        }
                    };
                    entries.push(entry(binding, buffer, window, access));
                }
                let layout = &self.layouts(key.kernel).group;
                let group = bind::create(&self.device, layout, &rules, &entries)?;
                Ok(BoundGroup { group, entries })
            })
            .collect()
    }

    fn bind_cache(&self) -> std::sync::MutexGuard<'_, BindCache> {
        self.bind_groups.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The frequency buffer of `inv_freq` and `axes` packed for groups of `g` pairs. The last
    /// one asked for is remembered by value, so that a repeated pass (a decode loop) neither
    /// packs nor hashes.
    pub(crate) fn packed_frequencies(
        &self,
        inv_freq: &[Dd],
        axes: &[u32],
        g: usize,
    ) -> Result<wgpu::Buffer> {
        let mut last = self
            .last_frequencies
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(memo) = last.as_ref()
            && memo.g == g
            && memo.axes == axes
            && memo.inv_freq.len() == inv_freq.len()
            && memo
                .inv_freq
                .iter()
                .zip(inv_freq)
                .all(|(a, b)| (a.hi.to_bits(), a.lo.to_bits()) == (b.hi.to_bits(), b.lo.to_bits()))
        {
            return Ok(memo.buffer.clone());
        }
        let buffer = self.frequency_buffer(crate::angle::pack_frequencies(inv_freq, axes, g))?;
        *last = Some(FrequencyMemo {
            inv_freq: inv_freq.to_vec(),
            axes: axes.to_vec(),
            g,
            buffer: buffer.clone(),
        });
        Ok(buffer)
    }
}
