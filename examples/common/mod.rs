//! What the examples share.

use std::path::{Path, PathBuf};

/// Gives the window-system probing of Mesa's drivers a runtime directory where the
/// environment names none.
///
/// Creating a wgpu instance loads Mesa's EGL and Vulkan drivers, which look for a Wayland
/// display; libwayland prints `error: XDG_RUNTIME_DIR is invalid or not set in the
/// environment.` when that variable is unset or not an absolute path, as on a fresh server
/// or in a container. Compute needs no window system, so the line is only noise before the
/// example's own output. When the variable does not name a directory, this points it at a
/// private one of this user's under the temporary directory, created with mode 0700; where
/// no such directory can be had (a non-Linux system, another user's directory in its place)
/// nothing is set and the noise stays.
///
/// # Safety
///
/// It sets an environment variable, which is sound only while no other thread reads or
/// writes the environment: call it first in `main`, before any thread is started.
pub unsafe fn ensure_xdg_runtime_dir() {
    let named = std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|dir| {
        let dir = Path::new(&dir);
        dir.is_absolute() && dir.is_dir()
    });
    if named {
        return;
    }
    if let Some(dir) = private_runtime_dir() {
        // SAFETY: the caller guarantees that no other thread exists yet.
        unsafe { std::env::set_var("XDG_RUNTIME_DIR", dir) };
    }
}

/// `<temp>/wgpu-posenc-<uid>`, made if absent; `None` unless it is an absolute path to a
/// directory (not a link) of this user's that no one else may enter.
#[cfg(unix)]
fn private_runtime_dir() -> Option<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    // /proc/self belongs to this process's user (Linux; elsewhere there is none, and nothing
    // is made).
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    let dir = std::env::temp_dir().join(format!("wgpu-posenc-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    let private = meta.is_dir() && meta.uid() == uid && meta.mode() & 0o077 == 0;
    (dir.is_absolute() && private).then_some(dir)
}

/// No XDG runtime directory outside Unix.
#[cfg(not(unix))]
fn private_runtime_dir() -> Option<PathBuf> {
    None
}
