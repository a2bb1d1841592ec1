#!/usr/bin/env bash
# Replays a wgpu-posenc capture on Dawn over SwiftShader: tests/dawn/run.sh <capture_dir>
# (or `tests/dawn/run.sh --selftest` to run the replayer's own self-test).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [ $# -ne 1 ]; then
  echo "usage: $0 <capture_dir> | --selftest" >&2
  exit 2
fi

swiftshader=/usr/lib/chromium/vk_swiftshader_icd.json
if [ -z "${VK_ICD_FILENAMES:-}" ]; then
  if [ ! -f "$swiftshader" ]; then
    echo "run.sh: $swiftshader not found: install Debian's chromium (apt-get install chromium libvulkan1)," >&2
    echo "or point VK_ICD_FILENAMES at a Vulkan driver that Dawn accepts" >&2
    exit 2
  fi
  export VK_ICD_FILENAMES="$swiftshader"
fi
# dawn.node loads libvulkan.so.1 (the loader, Debian package libvulkan1); chromium ships a copy.
loader_libs="$(ldconfig -p 2>/dev/null || true)"
if [[ "$loader_libs" != *"libvulkan.so.1 "* ]] && [ -f /usr/lib/chromium/libvulkan.so.1 ]; then
  export LD_LIBRARY_PATH="/usr/lib/chromium${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -d "$XDG_RUNTIME_DIR" ]; then
  XDG_RUNTIME_DIR="$(mktemp -d)"
  export XDG_RUNTIME_DIR
  trap 'rm -rf "$XDG_RUNTIME_DIR"' EXIT
fi

if [ ! -d "$here/node_modules/webgpu" ]; then
  echo "run.sh: $here/node_modules/webgpu is missing: run \`npm ci --prefix tests/dawn\` first" >&2
  exit 2
fi

if [ "$1" = "--selftest" ]; then
  exec_args=("$here/selftest.mjs")
else
  exec_args=("$here/replay.mjs" "$1")
fi
node "${exec_args[@]}"
