//! A record of what the pair passes dispatch — shader, override constants, bindings,
//! workgroups and the contents of every buffer they read — so that real calls can be
//! replayed on another WebGPU implementation (`tests/dawn` replays them on Dawn, the WebGPU
//! of Chrome, which enforces rules wgpu's native backends do not check).
//!
//! Feature `capture`. Attach a [`Capture`] with [`crate::PosEnc::with_capture`], note the
//! initial contents of your own buffers with [`Capture::note_buffer`], make calls, then take
//! what they dispatched with [`Capture::take_passes`].

use std::sync::{Arc, Mutex};

use super::Specialization;
use super::bind::{Access, Entry};

/// The shared record; clones refer to the same one.
#[derive(Clone, Debug, Default)]
pub struct Capture {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Every buffer seen, by index, with its contents when created (None if never noted).
    buffers: Vec<(wgpu::Buffer, Option<Vec<u8>>)>,
    passes: Vec<CapturedPass>,
}

/// One compute pass: its dispatches in order.
#[derive(Clone, Debug)]
pub struct CapturedPass {
    /// The dispatches.
    pub dispatches: Vec<CapturedDispatch>,
}

/// One dispatch.
#[derive(Clone, Debug)]
pub struct CapturedDispatch {
    /// The WGSL source of the pipeline.
    pub source: String,
    /// Its override constants.
    pub constants: Vec<(&'static str, f64)>,
    /// The entries of its bind group (group 0).
    pub bindings: Vec<CapturedBinding>,
    /// Workgroups along x, y and z.
    pub workgroups: [u32; 3],
}

/// One bind group entry: a window of a buffer known to the capture.
#[derive(Clone, Copy, Debug)]
pub struct CapturedBinding {
    /// The binding index.
    pub binding: u32,
    /// Index of the buffer (see [`Capture::buffer`]).
    pub buffer: usize,
    /// Byte offset of the window.
    pub offset: u64,
    /// Byte size of the window.
    pub size: u64,
    /// Declared writable (`read_write` storage).
    pub writable: bool,
    /// Declared as a uniform buffer.
    pub uniform: bool,
}

impl Capture {
    /// An empty record.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes the initial contents of `buffer` (a buffer of yours that a call will bind, or
    /// one the crate creates); returns its index.
    pub fn note_buffer(&self, buffer: &wgpu::Buffer, contents: &[u8]) -> usize {
        let mut inner = self.lock();
        let at = index_of(&mut inner, buffer);
        inner.buffers[at].1 = Some(contents.to_vec());
        at
    }

    /// The index of `buffer`, if it was seen.
    pub fn index(&self, buffer: &wgpu::Buffer) -> Option<usize> {
        self.lock().buffers.iter().position(|(b, _)| b == buffer)
    }

    /// Buffer `index` and its noted contents.
    pub fn buffer(&self, index: usize) -> Option<(wgpu::Buffer, Option<Vec<u8>>)> {
        self.lock().buffers.get(index).cloned()
    }

    /// The passes recorded since the last call, in order.
    pub fn take_passes(&self) -> Vec<CapturedPass> {
        std::mem::take(&mut self.lock().passes)
    }

    pub(crate) fn record_pass(&self, dispatches: Vec<(Specialization, Vec<Entry>, [u32; 3])>) {
        let sourced = dispatches
            .into_iter()
            .map(|(spec, entries, workgroups)| {
                (
                    spec.source().to_string(),
                    spec.constants(),
                    entries,
                    workgroups,
                )
            })
            .collect();
        self.record_sources(sourced);
    }

    /// A pass of one dispatch of a standalone shader (`shaders/position_grid.wgsl`).
    pub(crate) fn record_standalone(
        &self,
        source: &str,
        entries: Vec<Entry>,
        workgroups: [u32; 3],
    ) {
        self.record_sources(vec![(source.to_string(), Vec::new(), entries, workgroups)]);
    }

    #[allow(clippy::type_complexity)]
    fn record_sources(
        &self,
        dispatches: Vec<(String, Vec<(&'static str, f64)>, Vec<Entry>, [u32; 3])>,
    ) {
        let mut inner = self.lock();
        let dispatches = dispatches
            .into_iter()
            .map(
                |(source, constants, entries, workgroups)| CapturedDispatch {
                    source,
                    constants,
                    bindings: entries
                        .iter()
                        .map(|e| CapturedBinding {
                            binding: e.binding,
                            buffer: index_of(&mut inner, &e.buffer),
                            offset: e.offset,
                            size: e.size,
                            writable: e.access == Access::ReadWrite,
                            uniform: e.access == Access::Uniform,
                        })
                        .collect(),
                    workgroups,
                },
            )
            .collect();
        inner.passes.push(CapturedPass { dispatches });
    }
}

fn index_of(inner: &mut Inner, buffer: &wgpu::Buffer) -> usize {
    match inner.buffers.iter().position(|(b, _)| b == buffer) {
        Some(at) => at,
        None => {
            inner.buffers.push((buffer.clone(), None));
            inner.buffers.len() - 1
        }
    }
}
