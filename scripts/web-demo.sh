#!/usr/bin/env bash
# The demo in a browser: builds examples/demo.rs for wasm32 (release), binds it with
# wasm-bindgen for the web, serves examples/web/index.html on localhost and, unless --serve
# is given, opens it in headless Chromium on WebGPU (SwiftShader here) and prints the demo's
# lines from the console.
#
#   scripts/web-demo.sh [--seq N] [--serve] [--dev]
#
# With --serve, open http://localhost:8765/?seq=N in a browser with WebGPU instead. With
# --dev, the demo is built as the browser suite builds (`scripts/wasm-cargo.sh test
# --all-features`: the dev profile, every feature), reusing that build: CI checks the page
# that way; the figures in the README come from the release build.
set -euo pipefail
cd "$(dirname "$0")/.."
seq=2048 serve=
build=(--release) dir=release
while [ $# -gt 0 ]; do
    case "$1" in
        --seq) seq="$2"; shift 2 ;;
        --serve) serve=1; shift ;;
        --dev) build=(--all-features) dir=debug; shift ;;
        *) echo "usage: scripts/web-demo.sh [--seq N] [--serve] [--dev]" >&2; exit 2 ;;
    esac
done
scripts/wasm-cargo.sh build "${build[@]}" --example demo
out=target/web-demo
rm -rf "$out" && mkdir -p "$out"
wasm-bindgen --target web --no-typescript --out-dir "$out" \
    "target/wasm/wasm32-unknown-unknown/$dir/examples/demo.wasm"
cp examples/web/index.html "$out/"
port=8765
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$out" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
sleep 1
url="http://127.0.0.1:$port/?seq=$seq"
if [ -n "$serve" ]; then
    echo "serving $url (Ctrl-C stops)"
    wait $server
    exit 0
fi
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/xdg-wasm}"
mkdir -p "$XDG_RUNTIME_DIR"
profile=$(mktemp -d)
log=${WEB_DEMO_LOG:-$(mktemp)}
chromium --headless=new --no-sandbox --enable-unsafe-webgpu --use-webgpu-adapter=swiftshader \
    --enable-features=Vulkan --disable-dev-shm-usage --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --disable-quic \
    --user-data-dir="$profile" --enable-logging=stderr --v=0 "$url" 2>"$log" &
browser=$!
# Chromium's own child processes may still write to the profile as it goes: its removal is
# best effort, and never the script's status.
cleanup() {
    pkill -P "$browser" 2>/dev/null || true
    kill "$server" "$browser" 2>/dev/null || true
    wait "$browser" 2>/dev/null || true
    rm -rf "$profile" 2>/dev/null || true
}
trap cleanup EXIT
# The demo's last line is "demo: done" or "demo: <error>".
for _ in $(seq 1 600); do
    grep -q '"demo: ' "$log" && break
    sleep 1
done
grep -o 'CONSOLE[:(][0-9]*)*\] "[^"]*"' "$log" | sed 's/^[^"]*"//; s/"$//'
status=0
grep -q '"demo: done"' "$log" || status=1
exit $status
