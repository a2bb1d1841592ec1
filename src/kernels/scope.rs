//! The device's verdict on what the passes make (buffers, pipelines): wgpu reports a
//! validation or out-of-memory error through error scopes, whose pop is asynchronous.
//!
//! On native the pop resolves at once, so [`Passes::scoped`] returns the error with the
//! object it concerns. In a browser it resolves only once the page's event loop turns, which a
//! synchronous `encode_*` call cannot wait for: the pops are kept, and the next await point
//! of the context ([`Passes::settle`], called by every async host method before it reads
//! back) returns the first error and drops the caches that may hold the invalid object.

use crate::error::{Error, Result};

use super::passes::Passes;

#[cfg(target_arch = "wasm32")]
type Pop = std::pin::Pin<Box<dyn Future<Output = Option<wgpu::Error>>>>;

/// Error scopes popped but not yet resolved (the web only).
#[cfg(target_arch = "wasm32")]
#[derive(Default)]
pub(crate) struct Pending {
    pops: Vec<(&'static str, Pop)>,
}

#[cfg(target_arch = "wasm32")]
impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("pops", &self.pops.len())
            .finish()
    }
}

impl Passes {
    /// Runs `make` under validation and out-of-memory error scopes and returns what it
    /// made, or the device's error as [`Error::Device`] (on the web: from the next
    /// [`Passes::settle`]).
    pub(crate) fn scoped<T>(&self, what: &'static str, make: impl FnOnce() -> T) -> Result<T> {
        let memory = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let made = make();
        // Innermost first; each pop takes effect now, whenever its future resolves.
        let invalid = validation.pop();
        let oom = memory.pop();
        #[cfg(not(target_arch = "wasm32"))]
        {
            let error = pollster::block_on(invalid).or(pollster::block_on(oom));
            match error {
                None => Ok(made),
                Some(e) => Err(device_error(what, &e)),
            }
        }
        #[cfg(target_arch = "wasm32")]
        {
            let pop: Pop = Box::pin(async move { invalid.await.or(oom.await) });
            self.pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pops
                .push((what, pop));
            Ok(made)
        }
    }

    /// Waits for the verdict on everything made so far and returns the first error. After an
    /// error the caches are dropped, pipelines included, since one of them may hold the
    /// object that failed. Native: nothing is pending, this returns at once.
    pub(crate) async fn settle(&self) -> Result<()> {
        #[cfg(target_arch = "wasm32")]
        {
            let pops =
                std::mem::take(&mut self.pending.lock().unwrap_or_else(|e| e.into_inner()).pops);
            let mut first = None;
            for (what, pop) in pops {
                if let Some(e) = pop.await {
                    first.get_or_insert_with(|| device_error(what, &e));
                }
            }
            if let Some(error) = first {
                self.clear_caches();
                self.pipelines
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clear();
                return Err(error);
            }
        }
        Ok(())
    }
}

fn device_error(what: &'static str, e: &wgpu::Error) -> Error {
    Error::Device {
        what,
        message: e.to_string(),
    }
}
