#!/usr/bin/env bash
# Cargo for wasm32-unknown-unknown with Debian's toolchain: `rustc-web` (Debian's rustc with
# the wasm32 target), `rust-web-src` (std's sources, built here with -Zbuild-std: no
# prebuilt std for wasm32 can be fetched) and `lld-22` (wasm-ld). Tests run through
# wasm-bindgen-test-runner in headless Chromium (tests/web/webdriver.json).
#
#   scripts/wasm-cargo.sh test --test web       # the browser suite
#   scripts/wasm-cargo.sh build --release --example demo
#
# Rustup's shims come first in PATH: Debian's binaries are called by full path.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=wasm-ld-22
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
export WASM_BINDGEN_TEST_WEBDRIVER_JSON="$PWD/tests/web/webdriver.json"
export WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-600}"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"
# Browser tests need a runtime dir for Chromium's GPU process; root needs --no-sandbox (in
# the webdriver file).
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/xdg-wasm}"
mkdir -p "$XDG_RUNTIME_DIR"
cmd="$1"
shift
exec /usr/bin/cargo "$cmd" --target wasm32-unknown-unknown -Zbuild-std=std,panic_abort \
    --target-dir target/wasm "$@"
