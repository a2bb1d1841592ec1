// Self-test of replay.mjs: writes a hand-made capture to a temp dir, replays it and checks that
//  - a valid kernel (doubling an array, two passes) passes,
//  - two read_write storage bindings overlapping in one buffer are rejected by Dawn (aliasing),
//  - a call with wrong expected data (one value, one guard word) fails,
//  - a bf16-packing kernel passes (exercises the bf16 decoder),
//  - an `enable f16;` kernel passes, or is skipped where the adapter lacks shader-f16.
// Exits 0 iff all of that holds. Usage: node tests/dawn/selftest.mjs [--keep]
import { mkdtempSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'dawn-selftest-'));
const put = (name, data) => writeFileSync(join(dir, name), typeof data === 'string' ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength));

const N = 100;              // elements processed
const OUT_OFF = 256;        // byte offset of the output binding (minStorageBufferOffsetAlignment)
const OUT_WORDS = 256;      // output buffer: 1024 bytes, guard words around [64, 164)
const POISON = 0x7fc0dead;  // a NaN pattern in the guard words, which must survive bit for bit

put('double.wgsl', `
struct Params { n: u32, scale: f32, _pad0: u32, _pad1: u32 }
override SCALE: f32 = 1.0;
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read_write> counter: array<u32>;
@group(0) @binding(3) var<storage, read> src: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x;
  if (i == 0u) { counter[0] = counter[0] + 1u; }
  if (i >= params.n) { return; }
  dst[i] = src[i] * params.scale * SCALE;
}
`);
// Packs pairs of f32 into bf16 (truncating): dst[i] = hi16(src[2i]) | hi16(src[2i+1]) << 16.
put('bf16.wgsl', `
@group(0) @binding(0) var<uniform> params: vec4u;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<storage, read_write> unused: array<u32>;
@group(0) @binding(3) var<storage, read> src: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x;
  if (i >= params.x / 2u) { return; }
  dst[i] = (bitcast<u32>(src[2u * i]) >> 16u) | (bitcast<u32>(src[2u * i + 1u]) & 0xffff0000u);
  if (i == 0u) { unused[0] = 0u; }
}
`);
put('f16.wgsl', `enable f16;
@group(0) @binding(0) var<uniform> params: vec4u;
@group(0) @binding(1) var<storage, read_write> dst: array<f16>;
@group(0) @binding(2) var<storage, read_write> unused: array<u32>;
@group(0) @binding(3) var<storage, read> src: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x;
  if (i >= params.x) { return; }
  dst[i] = f16(src[i] * 2.0);
  if (i == 0u) { unused[0] = 0u; }
}
`);

const params = new Uint32Array(64); params[0] = N; new Float32Array(params.buffer)[1] = 1.0;
const src = new Float32Array(N).map((_, i) => Math.sin(i * 0.37) * (i + 1) / 7);
const outInit = new Uint32Array(OUT_WORDS).fill(POISON);
const outExp = new Uint32Array(OUT_WORDS).fill(POISON);
new Float32Array(outExp.buffer, OUT_OFF, N).set(src.map((v) => v * 2));
const counter = new Uint32Array(64);
const counterExp = new Uint32Array(64); counterExp[0] = 2; // two passes, one increment each
const wrongExp = outExp.slice();
new Float32Array(wrongExp.buffer)[64 + 6] += 1e-3;        // a value off by more than the tolerance
wrongExp[OUT_WORDS - 1] = 0;                               // a guard word that does not match
const u32 = new Uint32Array(src.buffer);
const bf16Exp = new Uint32Array(64).map((_, i) => i < N / 2 ? ((u32[2 * i] >>> 16) | (u32[2 * i + 1] & 0xffff0000)) >>> 0 : 0);
put('params.bin', params); put('src.bin', src); put('out_init.bin', outInit); put('out_exp.bin', outExp);
put('counter.bin', counter); put('counter_exp.bin', counterExp); put('wrong_exp.bin', wrongExp);
put('zero256.bin', new Uint32Array(64)); put('bf16_exp.bin', bf16Exp);
// f16 expectation: the f32 product rounded to f16 here; the tolerance allows the GPU one f16 ulp.
const f16Exp = new Float32Array(N).map((_, i) => src[i] * 2);
const f16Bits = new Uint16Array(128);
for (let i = 0; i < N; i++) f16Bits[i] = toF16Bits(f16Exp[i]);
put('f16_exp.bin', f16Bits);

function toF16Bits(x) { // round-to-nearest, normal range only (enough for this data)
  if (x === 0) return 0;
  const s = x < 0 ? 0x8000 : 0; x = Math.abs(x);
  let e = Math.floor(Math.log2(x)); let m = Math.round((x / 2 ** e - 1) * 1024);
  if (m === 1024) { m = 0; e++; }
  return s | ((e + 15) << 10) | m;
}

const buffers = [
  { id: 0, size: 256, init: 'params.bin' },
  { id: 1, size: OUT_WORDS * 4, init: 'out_init.bin' },
  { id: 2, size: 256, init: 'counter.bin' },
  { id: 3, size: N * 4, init: 'src.bin' },
];
const bind = (b1) => [
  { binding: 0, buffer: 0, offset: 0, size: 16 },
  b1,
  { binding: 2, buffer: 2, offset: 0, size: 256 },
  { binding: 3, buffer: 3, offset: 0, size: N * 4 },
];
const doubleDispatch = { pipeline: 0, bindings: bind({ binding: 1, buffer: 1, offset: OUT_OFF, size: N * 4 }), workgroups: [2, 1, 1] };
const outCheck = (expect) => ({ buffer: 1, expect, dtype: 'f32', tolerance: [[64, 64 + N, 0, 1e-7]] });
const simple = (pipeline, outSize) => ({
  buffers: [{ id: 0, size: 256, init: 'params.bin' }, { id: 1, size: outSize, init: null },
    { id: 2, size: 256, init: 'zero256.bin' }, { id: 3, size: N * 4, init: 'src.bin' }],
  passes: [{ dispatches: [{ pipeline, bindings: bind({ binding: 1, buffer: 1, offset: 0, size: outSize }), workgroups: [2, 1, 1] }] }],
});

const manifest = {
  layout: [
    { binding: 0, type: 'uniform' }, { binding: 1, type: 'storage' },
    { binding: 2, type: 'storage' }, { binding: 3, type: 'read-only-storage' },
  ],
  pipelines: [
    { wgsl: 'double.wgsl', entry: 'main', constants: { SCALE: 2 } },
    { wgsl: 'bf16.wgsl', entry: 'main', constants: {} },
    { wgsl: 'f16.wgsl', entry: 'main' },
  ],
  features: ['shader-f16'],
  calls: [
    { name: 'valid double', buffers, passes: [{ dispatches: [doubleDispatch] }, { dispatches: [doubleDispatch] }],
      checks: [outCheck('out_exp.bin'), { buffer: 2, expect: 'counter_exp.bin', dtype: 'u32' }] },
    { name: 'aliased writable bindings', buffers,
      passes: [{ dispatches: [{ pipeline: 0, workgroups: [2, 1, 1],
        bindings: bind({ binding: 1, buffer: 2, offset: 0, size: 256 }) }] }], // binding 2 is buffer 2 [0, 256) too
      checks: [] },
    { name: 'wrong expected data', buffers, passes: [{ dispatches: [doubleDispatch] }],
      checks: [outCheck('wrong_exp.bin')] },
    { name: 'bf16 pack', ...simple(1, 256), checks: [{ buffer: 1, expect: 'bf16_exp.bin', dtype: 'bf16', tolerance: [[0, N, 0, 0]] }] },
    { name: 'f16 double', ...simple(2, 256), checks: [{ buffer: 1, expect: 'f16_exp.bin', dtype: 'f16', tolerance: [[0, N, 1e-4, 2e-3]] }] },
  ],
};
for (const c of manifest.calls) for (const b of c.buffers) if (b.init === null) delete b.init;
put('manifest.json', JSON.stringify(manifest, null, 2));

const env = { ...process.env };
const icd = '/usr/lib/chromium/vk_swiftshader_icd.json';
if (!env.VK_ICD_FILENAMES && existsSync(icd)) env.VK_ICD_FILENAMES = icd;
if (!env.XDG_RUNTIME_DIR) env.XDG_RUNTIME_DIR = mkdtempSync(join(tmpdir(), 'xdg-'));
const r = spawnSync(process.execPath, [join(here, 'replay.mjs'), dir], { env, encoding: 'utf8', timeout: 300_000 });
process.stdout.write(r.stdout); process.stderr.write(r.stderr);

const status = (name) => (r.stdout.match(new RegExp(`^\\[\\d+/\\d+\\] ${name}: (\\w+)(.*)$`, 'm')) ?? [])[1];
const line = (name) => (r.stdout.match(new RegExp(`^\\[\\d+/\\d+\\] ${name}: .*$`, 'm')) ?? [''])[0];
const expectations = [
  ['valid kernel passes', status('valid double') === 'OK'],
  ['aliasing rejected by Dawn', status('aliased writable bindings') === 'FAIL' && /aliasing/i.test(line('aliased writable bindings'))],
  ['wrong expected data fails', status('wrong expected data') === 'FAIL' && /2 mismatching/.test(line('wrong expected data'))
    && /\[70\] tol/.test(r.stdout) && /\[255\] bits/.test(r.stdout)],
  ['bf16 pack passes', status('bf16 pack') === 'OK'],
  ['f16 passes or is skipped', ['OK', 'SKIP'].includes(status('f16 double'))],
  ['replayer exits 1', r.status === 1],
];
let failed = 0;
for (const [what, ok] of expectations) { console.log(`selftest ${ok ? 'ok  ' : 'FAIL'} ${what}`); failed += !ok; }
if (process.argv.includes('--keep')) console.log(`capture kept in ${dir}`); else rmSync(dir, { recursive: true, force: true });
console.log(`selftest: ${expectations.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
