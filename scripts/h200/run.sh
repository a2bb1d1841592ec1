#!/usr/bin/env bash
# One run on a lent NVIDIA H200 (issue: throughput on a real GPU), after
# scripts/h200/prepare.sh here: correctness first (the whole suite on the GPU's Vulkan
# adapter), then the throughput tool at S = 16384, 65536, 131072 and 1M ([1, 32, S, 128] f32;
# sizes over the adapter's largest buffer are skipped and say so), both pair layouts, BHSD and
# BSHD, the sinusoidal table and fused add, decode latency, with the identity shader and
# copy_buffer_to_buffer in the same run. Everything lands in $OUT: gpu.txt, adapter.txt,
# tests.log, throughput.json (one object per row), throughput.txt (the table).
#
#   device run: bash scripts/h200/run.sh      carry: [".h200"]      timeout_s: 420
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/h200-out}
mkdir -p "$OUT"
for f in .h200/deb/*.deb; do dpkg -x "$f" /; done
ldconfig
nv=/usr/local/nvidia/share
if ! ls /usr/share/vulkan/icd.d/nvidia*.json /etc/vulkan/icd.d/nvidia*.json >/dev/null 2>&1 &&
    [ -f $nv/vulkan/icd.d/nvidia_icd.json ]; then
    export VK_DRIVER_FILES=$nv/vulkan/icd.d/nvidia_icd.json
    export __EGL_VENDOR_LIBRARY_FILENAMES=$nv/glvnd/egl_vendor.d/10_nvidia.json
fi
built_at=$(cat .h200/built_at)
if [ ! -e "$built_at" ]; then mkdir -p "$(dirname "$built_at")" && ln -s "$PWD" "$built_at"; fi
bin=/tmp/h200-bin
rm -rf "$bin" && mkdir -p "$bin" && tar -C "$bin" --strip-components=1 -xJf .h200/bin.tar.xz
export WGPU_BACKEND=vulkan
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
    --format=csv >"$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"

# 1. Correctness: the demo (adapter, sizes, error against the reference), then every test.
timeout 60 "$bin/demo" 2>&1 | tee "$OUT/adapter.txt"
failed=0
: >"$OUT/tests.log"
for t in "$bin"/*; do
    case $(basename "$t") in demo | throughput) continue ;; esac
    echo "=== $(basename "$t")" >>"$OUT/tests.log"
    # The demo's exit-status test runs `cargo`, which that machine does not have.
    if ! timeout 120 "$t" --test-threads=4 --skip the_demo_prints_its_errors \
        >>"$OUT/tests.log" 2>&1; then
        failed=$((failed + 1))
        echo "FAILED: $(basename "$t")" | tee -a "$OUT/tests.log"
    fi
done
grep -E "^test result|FAILED" "$OUT/tests.log"
echo "test binaries failed: $failed"

# 2. Throughput (the bench's own warm-up and medians), table on stderr, JSON on stdout.
timeout 300 "$bin/throughput" --seq "${H200_SEQ:-16384,65536,131072,1048576}" --json \
    >"$OUT/throughput.json" 2>"$OUT/throughput.txt"
echo "throughput exit: $?"
cat "$OUT/throughput.txt"
