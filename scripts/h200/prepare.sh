#!/usr/bin/env bash
# Builds here what scripts/h200/run.sh runs on a lent GPU machine (which has no Rust toolchain
# and no network): the release test binaries, the throughput bench and the demo, stripped and
# packed into .h200/bin.tar.xz, and the Vulkan/EGL loader packages into .h200/deb. The folder
# is ignored by git and travels as a carried path (under the 64 MiB limit: about 45 MiB).
#
#   bash scripts/h200/prepare.sh        # then: run `bash scripts/h200/run.sh`, carry [".h200"]
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=.h200
rm -rf "$out" && mkdir -p "$out/bin" "$out/deb"

# Test binaries (all but the Dawn replay, which needs Node and SwiftShader), in release.
cargo test --release --all-features --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | grep -v '/dawn-' >"$out/tests.txt"
cargo bench --bench throughput --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*"' | cut -d'"' -f4 >"$out/bench.txt"
cargo build --release --example demo
while read -r exe; do
    name=$(basename "$exe" | sed 's/-[0-9a-f]*$//')
    strip -o "$out/bin/$name" "$exe"
done < <(cat "$out/tests.txt" "$out/bench.txt")
# The unit tests of the library are named after the crate; the bench after its target.
mv "$out/bin/wgpu_posenc" "$out/bin/unit"
strip -o "$out/bin/demo" target/release/examples/demo
# The tests read golden data through the path they were built at.
echo "$root" >"$out/built_at"
tar -C "$out" -cJf "$out/bin.tar.xz" bin && rm -rf "$out/bin"

# Loaders: the machine has NVIDIA's driver but maybe not libvulkan.so.1 / libEGL.
mkdir -p /tmp/amd64/partial
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
# shellcheck disable=SC2086
apt-get $o update -qq
# shellcheck disable=SC2086
(cd "$out/deb" && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
du -sh "$out"
