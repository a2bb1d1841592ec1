//! The device's verdict on what the passes make (buffers, pipelines): wgpu reports a
//! validation or out-of-memory error through error scopes, whose pop is asynchronous.
//!
//! On native the pop resolves at once, so [`Scopes::run`] returns the error with the object
//! it concerns. In a browser it resolves only once the page's event loop turns, which a
//! synchronous `encode_*` call cannot wait for: the pops are kept, and the next await point
//! of the context (`Passes::settle`, called by every async host method before it reads
//! back) returns the first error; the passes then drop the caches that may hold the invalid
//! object.

use crate::error::{Error, Result};

#[cfg(target_arch = "wasm32")]
type Pop = std::pin::Pin<Box<dyn Future<Output = Option<wgpu::Error>>>>;

/// The error scopes of one context: on the web, those popped but not yet resolved (native
/// has none pending, and this holds nothing).
#[derive(Default)]
pub(crate) struct Scopes {
    #[cfg(target_arch = "wasm32")]
    pops: std::sync::Mutex<Vec<(&'static str, Pop)>>,
}

impl std::fmt::Debug for Scopes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        #[cfg(target_arch = "wasm32")]
        let pending = self.pops.lock().map_or(0, |p| p.len());
        #[cfg(not(target_arch = "wasm32"))]
        let pending = 0;
        f.debug_struct("Scopes").field("pending", &pending).finish()
    }
}

impl Scopes {
    /// Runs `make` under validation and out-of-memory error scopes of `device` and returns
    /// what it made, or the device's error as [`Error::Device`] (on the web: from the next
    /// [`Scopes::settle`]).
    pub(crate) fn run<T>(
        &self,
        device: &wgpu::Device,
        what: &'static str,
        make: impl FnOnce() -> T,
    ) -> Result<T> {
        let memory = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
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
            self.pops
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((what, pop));
            Ok(made)
        }
    }

    /// Waits for the verdict on everything made so far and returns the first error (each
    /// verdict is returned once). Native: nothing is pending, this returns at once.
    pub(crate) async fn settle(&self) -> Result<()> {
        #[cfg(target_arch = "wasm32")]
        {
            let pops = std::mem::take(&mut *self.pops.lock().unwrap_or_else(|e| e.into_inner()));
            let mut first = None;
            for (what, pop) in pops {
                if let Some(e) = pop.await {
                    first.get_or_insert_with(|| device_error(what, &e));
                }
            }
            if let Some(error) = first {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A device on the adapter `WGPU_BACKEND` selects (the page's WebGPU in a browser), with
    /// the default request: the scopes need nothing more, and nothing above `kernels`.
    async fn device() -> wgpu::Device {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = instance
            .request_adapter(&Default::default())
            .await
            .unwrap_or_else(|e| panic!("the GPU tests need an adapter: {e}"));
        let (device, _queue) = adapter
            .request_device(&Default::default())
            .await
            .unwrap_or_else(|e| panic!("the GPU tests need a device: {e}"));
        device
    }

    /// A buffer WebGPU forbids (`MAP_READ` with `STORAGE`), made through `run`: natively
    /// the call itself returns the device's error; on the web the call cannot wait for it,
    /// and the next `settle` returns it (once: the verdict is consumed).
    async fn an_invalid_buffer_is_reported() {
        let device = device().await;
        let scopes = Scopes::default();
        let made = scopes.run(&device, "a MAP_READ | STORAGE buffer", || {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("invalid on purpose"),
                size: 16,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            })
        });
        let settled = scopes.settle().await;
        let error = if cfg!(target_arch = "wasm32") {
            assert!(made.is_ok(), "the web reports at the next await");
            settled.expect_err("settle returns the device's error")
        } else {
            settled.expect("nothing pending natively");
            made.expect_err("the call returns the device's error")
        };
        assert!(
            matches!(
                error,
                Error::Device {
                    what: "a MAP_READ | STORAGE buffer",
                    ..
                }
            ),
            "{error}"
        );
        scopes.settle().await.expect("the verdict was consumed");
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn an_invalid_buffer_is_reported_by_the_call() {
        pollster::block_on(an_invalid_buffer_is_reported());
    }

    #[cfg(target_arch = "wasm32")]
    wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

    #[cfg(target_arch = "wasm32")]
    #[wasm_bindgen_test::wasm_bindgen_test]
    async fn an_invalid_buffer_is_reported_by_the_next_await() {
        an_invalid_buffer_is_reported().await;
    }
}
